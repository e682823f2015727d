#!/usr/bin/env python3
"""Lists the keywords HAProxy 2.6 documents, for sluice's "not supported by
sluice yet" messages.

Reads HAProxy's doc/configuration.txt (version 2.6) and prints one line
per keyword: `<kind>\t<keyword>\t<where>`, sorted, where <kind> is one of
section, global, proxy, option, http-request, http-response,
http-after-response, tcp-request, tcp-response, bind, server, fetch,
converter, and <where> the sections a proxy keyword is allowed in (from the
keyword matrix), the rule set of a tcp-request/tcp-response action
(connection, content, session) or the manual's chapter.

Usage (the output is committed as src/config/haproxy26_keywords.tsv):

    git --git-dir=<haproxy.git> show v2.6.0:doc/configuration.txt \\
        | tools/haproxy_keywords.py > src/config/haproxy26_keywords.tsv
    # or: zcat /usr/share/doc/haproxy/configuration.txt.gz | tools/...

Only names are taken from the manual, never its text.
"""
import re
import sys

MATCH_TYPES = ["str", "beg", "dir", "dom", "end", "int", "ip", "len", "reg", "sub"]
OUTPUT_TYPES = ["str", "int", "ip"]


def chapter(lines, title):
    """Index of the line that starts chapter `title` (e.g. "5.1."), the
    heading underlined by dashes, not the table of contents entry."""
    for i, l in enumerate(lines):
        if l.startswith(title + " ") and i + 1 < len(lines) and lines[i + 1].startswith("---"):
            return i
    raise SystemExit(f"chapter {title} not found")


def headings(lines, start, end):
    """Keyword headings of a reference chapter: lines at column 0 that
    start with a lower-case name."""
    for l in lines[start + 2:end]:
        if re.match(r"^[a-z][a-z0-9_.<>-]*", l) and not l.startswith(("note", "example")):
            yield l.rstrip()


def name_of(heading):
    m = re.match(r"^([a-z][a-z0-9_.<>+-]*)", heading)
    return m.group(1) if m else None


def expand(name):
    """`map_<match_type>` and friends name one keyword per match type."""
    if "<match_type>" in name:
        names = [name.replace("<match_type>", t) for t in MATCH_TYPES]
        if "<output_type>" in name:
            names = [n.replace("<output_type>", o) for n in names for o in OUTPUT_TYPES]
        elif name.startswith("map_"):
            # The table under this heading names one more: "map_regm".
            names.append("map_regm")
        return names
    if "<" in name:
        return []
    return [name]


def main():
    lines = sys.stdin.read().split("\n")
    out = set()

    # Section keywords: a heading "<name> <id>" whose description says it
    # creates or declares something new (a userlist, a peers section...).
    for i, l in enumerate(lines):
        m = re.match(r"^([a-z][a-z-]*) <[^>]+>\s*$", l)
        if not m:
            continue
        text = " ".join(lines[i + 1:i + 3])
        if re.search(r"\b(Creates? (a )?new|Declare a|a new \S+ section)", text):
            out.add(("section", m.group(1), "3"))

    # Global keywords: the "- keyword" lists of chapter 3's introduction.
    g0, g1 = chapter(lines, "3."), chapter(lines, "3.1.")
    for l in lines[g0:g1]:
        m = re.match(r"^   - ([a-z0-9][a-z0-9_.-]*)", l)
        if m:
            out.add(("global", m.group(1), "3"))

    # Proxy keywords and options: the keyword matrix of 4.1.
    m0, m1 = chapter(lines, "4.1."), chapter(lines, "4.2.")
    cols = ["defaults", "frontend", "listen", "backend"]
    for l in lines[m0:m1]:
        m = re.match(r"^([a-z][a-z0-9_. -]*?)\s{2,}(\(\*\)\s+)?(.*)$", l)
        if not m:
            continue
        kw, marks = m.group(1).strip(), m.group(3)
        flags = re.findall(r"X|-", marks)
        if len(flags) != 4:
            continue
        where = ",".join(c for c, f in zip(cols, flags) if f == "X")
        words = kw.split()
        if words[0] == "option" and len(words) > 1:
            out.add(("option", words[1], where))
        else:
            out.add(("proxy", words[0], where))

    # Rule actions: the "http-request <action> ..." headings of 4.2.
    r0 = m1
    r1 = chapter(lines, "5.")
    for h in headings(lines, r0, r1):
        words = h.split()
        if words[0] in ("http-request", "http-response", "http-after-response") and len(words) > 1:
            action = re.match(r"^([a-z][a-z0-9_-]*)", words[1])
            if action and not words[1].startswith("<"):
                out.add((words[0], action.group(1), "4.2"))
        # "tcp-request connection accept ...": the rule set, then the action.
        if words[0] in ("tcp-request", "tcp-response") and len(words) > 2:
            action = re.match(r"^([a-z][a-z0-9_-]*)", words[2])
            if action and words[1] in ("connection", "content", "session"):
                out.add((words[0], action.group(1), words[1]))

    # bind and server options: headings of 5.1 and 5.2.
    for kind, a, b in (("bind", "5.1.", "5.2."), ("server", "5.2.", "5.3.")):
        for h in headings(lines, chapter(lines, a), chapter(lines, b)):
            # An option heading is the name alone or followed by its
            # arguments (`<file>`, `[none|...]`, `{...}`), not prose.
            words = h.split()
            # "expose-fd listeners": a name and one literal value.
            literal = len(words) == 2 and re.match(r"^[a-z]+$", words[1])
            if len(words) > 1 and not literal and not words[1].startswith(("<", "[", "{", "(")):
                continue
            n = name_of(h)
            if n:
                for k in expand(n):
                    out.add((kind, k, a.rstrip(".")))

    # Converters (7.3.1) and fetches (7.3.2 to 7.3.6): headings.
    c0, c1 = chapter(lines, "7.3.1."), chapter(lines, "7.3.2.")
    for h in headings(lines, c0, c1):
        # A converter heading is its name and arguments only, unlike the
        # chapter's prose that may start at column 0 too.
        if not re.match(r"^[a-z][a-z0-9_.<>-]*(\(.*\))?\s*(:.*)?$", h):
            continue
        n = name_of(h)
        if n:
            for k in expand(n):
                out.add(("converter", k, "7.3.1"))
    f1 = chapter(lines, "7.4.")
    for h in headings(lines, c1, f1):
        # A fetch heading names its output type: "base : string".
        if " : " not in h:
            continue
        n = name_of(h)
        if n:
            for k in expand(n):
                out.add(("fetch", k, "7.3"))

    for kind, kw, where in sorted(out):
        print(f"{kind}\t{kw}\t{where}")


if __name__ == "__main__":
    main()
