//! `userlist` sections as the `http_auth` and `http_auth_group` fetches
//! see them: users, their passwords (clear or crypt(3) hashes) and groups,
//! and the check of a request's `Authorization: Basic` credentials.
//!
//! The running configuration's lists are published process-wide (one
//! atomic pointer, read without a lock) when its snapshot is compiled, as
//! a fetch names its list by name and HAProxy resolves it after parsing.

use std::sync::Arc;

use arc_swap::ArcSwap;
use base64::Engine as _;
use md5::Digest as _;

/// One `userlist <name>` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Userlist {
    pub(crate) name: String,
    /// The `group` names, in order.
    pub(crate) groups: Vec<String>,
    pub(crate) users: Vec<User>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct User {
    pub(crate) name: String,
    pub(crate) password: Password,
    /// The groups the user is in (from its `groups` and the groups'
    /// `users`).
    pub(crate) groups: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Password {
    /// No password (`user <name>` alone): never authenticated.
    None,
    /// `insecure-password <pw>`.
    Clear(String),
    /// `password <hash>`, a crypt(3) hash of a kind [`check_hash`] took.
    Hash(String),
}

/// Whether sluice can check `hash`: SHA-512 (`$6$`), SHA-256 (`$5$`) and
/// MD5 (`$1$`) crypt. Anything else (DES crypt, bcrypt, yescrypt) is
/// refused with this message.
pub(crate) fn check_hash(hash: &str) -> Result<(), String> {
    if ["$6$", "$5$", "$1$"].iter().any(|p| hash.starts_with(p)) {
        return Ok(());
    }
    Err(format!(
        "password hash '{hash}' is of a kind sluice cannot check: only SHA-512 ('$6$'), SHA-256 ('$5$') and MD5 ('$1$') crypt(3) hashes are supported"
    ))
}

impl Userlist {
    fn user(&self, name: &[u8]) -> Option<&User> {
        self.users.iter().find(|u| u.name.as_bytes() == name)
    }

    /// Whether user `name` is in one of `groups`.
    pub(crate) fn in_any_group<'g>(
        &self,
        name: &[u8],
        mut groups: impl Iterator<Item = &'g str>,
    ) -> bool {
        self.user(name)
            .is_some_and(|u| groups.any(|g| u.groups.iter().any(|x| x == g)))
    }

    /// The user whose name and password `authorization` (the header's
    /// value) carries, if they are valid.
    pub(crate) fn authenticate(&self, authorization: &[u8]) -> Option<&User> {
        let (user, pass) = basic_credentials(authorization)?;
        let u = self.user(&user)?;
        let ok = match &u.password {
            Password::None => false,
            Password::Clear(p) => eq_ct(p.as_bytes(), &pass),
            Password::Hash(h) => verify_crypt(&pass, h),
        };
        ok.then_some(u)
    }
}

/// The data of an Authorization field, as HAProxy reads it: `Basic
/// <base64(user:pass)>` or `Bearer <token>` (the scheme in any case);
/// anything else, or a Basic one that does not decode to `user:pass`, is
/// none.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Credentials {
    Basic { user: Vec<u8>, pass: Vec<u8> },
    Bearer(Vec<u8>),
}

impl Credentials {
    pub(crate) fn parse(value: &[u8]) -> Option<Credentials> {
        let value = crate::wire::h1::trim(value);
        let sp = value.iter().position(|&b| b == b' ')?;
        let (scheme, rest) = (&value[..sp], crate::wire::h1::trim(&value[sp + 1..]));
        if scheme.eq_ignore_ascii_case(b"basic") {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(rest)
                .ok()?;
            let colon = decoded.iter().position(|&b| b == b':')?;
            Some(Credentials::Basic {
                user: decoded[..colon].to_vec(),
                pass: decoded[colon + 1..].to_vec(),
            })
        } else if scheme.eq_ignore_ascii_case(b"bearer") && !rest.is_empty() {
            Some(Credentials::Bearer(rest.to_vec()))
        } else {
            None
        }
    }

    /// `http_auth_type`'s name for the scheme.
    pub(crate) fn scheme(&self) -> &'static str {
        match self {
            Credentials::Basic { .. } => "Basic",
            Credentials::Bearer(_) => "Bearer",
        }
    }
}

/// `Basic <base64(user:pass)>`: the user and the password.
fn basic_credentials(value: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    match Credentials::parse(value)? {
        Credentials::Basic { user, pass } => Some((user, pass)),
        Credentials::Bearer(_) => None,
    }
}

/// Equality whose time does not depend on where the inputs differ.
fn eq_ct(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Checks `pass` against a crypt(3) hash.
pub(crate) fn verify_crypt(pass: &[u8], hash: &str) -> bool {
    let computed = if let Some(rest) = hash.strip_prefix("$1$") {
        let salt = rest.split('$').next().unwrap_or("");
        md5_crypt(pass, salt.as_bytes())
    } else if let Some((kind, rest)) = hash
        .strip_prefix("$6$")
        .map(|r| (6, r))
        .or_else(|| hash.strip_prefix("$5$").map(|r| (5, r)))
    {
        match sha_crypt(kind, pass, rest) {
            Some(c) => c,
            None => return false,
        }
    } else {
        return false;
    };
    eq_ct(computed.as_bytes(), hash.as_bytes())
}

/// SHA-crypt (`$5$`, `$6$`): `rest` is `[rounds=<n>$]<salt>[$<hash>]`;
/// gives the whole hash string crypt(3) would.
fn sha_crypt(kind: u8, pass: &[u8], rest: &str) -> Option<String> {
    let (rounds, rest, explicit) = match rest.strip_prefix("rounds=") {
        Some(r) => {
            let (n, rest) = r.split_once('$')?;
            let n: usize = n.parse().ok()?;
            (n, rest, true)
        }
        None => (sha_crypt::ROUNDS_DEFAULT, rest, false),
    };
    // crypt(3) brings the rounds into range and keeps 16 salt bytes.
    let rounds = rounds.clamp(sha_crypt::ROUNDS_MIN, sha_crypt::ROUNDS_MAX);
    let salt = rest.split('$').next().unwrap_or("");
    let salt = &salt[..salt.len().min(16)];
    let digest = if kind == 6 {
        let p = sha_crypt::Sha512Params::new(rounds).ok()?;
        sha_crypt::sha512_crypt_b64(pass, salt.as_bytes(), &p).ok()?
    } else {
        let p = sha_crypt::Sha256Params::new(rounds).ok()?;
        sha_crypt::sha256_crypt_b64(pass, salt.as_bytes(), &p).ok()?
    };
    let rounds_part = if explicit {
        format!("rounds={rounds}$")
    } else {
        String::new()
    };
    Some(format!("${kind}${rounds_part}{salt}${digest}"))
}

const ITOA64: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// MD5-crypt (`$1$`, Poul-Henning Kamp's algorithm, as glibc has it):
/// the whole hash string for `salt` (at most 8 bytes used).
fn md5_crypt(pass: &[u8], salt: &[u8]) -> String {
    let salt = &salt[..salt.len().min(8)];
    let mut alt = md5::Md5::new();
    alt.update(pass);
    alt.update(salt);
    alt.update(pass);
    let alt = alt.finalize();
    let mut ctx = md5::Md5::new();
    ctx.update(pass);
    ctx.update(b"$1$");
    ctx.update(salt);
    let mut left = pass.len();
    while left > 0 {
        let n = left.min(16);
        ctx.update(&alt[..n]);
        left -= n;
    }
    let mut i = pass.len();
    while i > 0 {
        if i & 1 == 1 {
            ctx.update([0u8]);
        } else {
            ctx.update(&pass[..1]);
        }
        i >>= 1;
    }
    let mut fin = ctx.finalize();
    for r in 0..1000 {
        let mut c = md5::Md5::new();
        if r & 1 == 1 {
            c.update(pass);
        } else {
            c.update(fin);
        }
        if r % 3 != 0 {
            c.update(salt);
        }
        if r % 7 != 0 {
            c.update(pass);
        }
        if r & 1 == 1 {
            c.update(fin);
        } else {
            c.update(pass);
        }
        fin = c.finalize();
    }
    let f = fin;
    let mut out = String::with_capacity(34);
    out.push_str("$1$");
    out.push_str(&String::from_utf8_lossy(salt));
    out.push('$');
    let mut put = |v: u32, n: usize| {
        let mut v = v;
        for _ in 0..n {
            out.push(ITOA64[(v & 0x3f) as usize] as char);
            v >>= 6;
        }
    };
    for (a, b, c) in [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)] {
        put(
            (u32::from(f[a]) << 16) | (u32::from(f[b]) << 8) | u32::from(f[c]),
            4,
        );
    }
    put(u32::from(f[11]), 2);
    out
}

/// The running configuration's userlists.
static LISTS: std::sync::LazyLock<ArcSwap<Vec<Userlist>>> =
    std::sync::LazyLock::new(|| ArcSwap::from_pointee(Vec::new()));

/// Makes `lists` the ones the fetches see.
pub(crate) fn publish(lists: &[Userlist]) {
    LISTS.store(Arc::new(lists.to_vec()));
}

/// Runs `f` on the userlist named `name`, if the running configuration has
/// it.
pub(crate) fn with_list<R>(name: &str, f: impl FnOnce(&Userlist) -> R) -> Option<R> {
    let lists = LISTS.load();
    lists.iter().find(|l| l.name == name).map(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crypt_hashes_as_openssl_passwd() {
        // `openssl passwd -1|-5|-6 -salt saltsalt secret`, and `-5` with
        // `rounds=1000$abc`.
        for h in [
            "$1$saltsalt$9xy1btjgzLYfb7hivXtC//",
            "$5$saltsalt$0IyaXrmV7.sGNS6tirgqHLqX/G.FBvgkYA.lpPdS5sA",
            "$6$saltsalt$TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1",
            "$5$rounds=1000$abc$Mz4DiYKTnNKbZLo/mIp3d8Y4aQBhv3uhSwxLDy55/Y8",
        ] {
            assert!(verify_crypt(b"secret", h), "{h}");
            assert!(!verify_crypt(b"secreT", h), "{h}");
        }
        assert!(check_hash("abDESxyz").is_err());
    }

    #[test]
    fn basic_credentials_are_read() {
        let v = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("alice:se:cret")
        );
        assert_eq!(
            basic_credentials(v.as_bytes()),
            Some((b"alice".to_vec(), b"se:cret".to_vec()))
        );
        assert_eq!(basic_credentials(b"Bearer x"), None);
    }
}
