//! Config words to ACL definitions and conditions (pure).
