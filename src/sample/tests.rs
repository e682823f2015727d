//! The engine against HAProxy 2.6.12: each expression below was evaluated
//! by haproxy with `http-request return ... lf-string "[%[<expr>]]"` and
//! the answer's body recorded (without the brackets). Dates are UTC
//! (`utime`, `http_date`) so the captures hold on any machine.

use super::{Ctx, Expr, ExprError};

const CAPTURED: &[(&str, &[u8])] = &[
    ("str(abc),upper", b"ABC"),
    ("str(ABC),lower", b"abc"),
    ("str(hello),length", b"5"),
    ("str(hello),hex", b"68656C6C6F"),
    ("str(hello),base64", b"aGVsbG8="),
    ("str(aGVsbG8=),b64dec", b"hello"),
    ("str(12),add(5)", b"17"),
    ("str(12abc),add(1)", b"13"),
    ("str(abc),add(1)", b"1"),
    ("str(-7),neg", b"7"),
    ("int(7),neg", b"-7"),
    ("int(10),div(3)", b"3"),
    ("int(10),div(0)", b"9223372036854775807"),
    ("int(10),mod(3)", b"1"),
    ("int(10),mod(0)", b"0"),
    ("int(5),mul(-2)", b"-10"),
    ("int(5),sub(7)", b"-2"),
    ("int(6),and(3)", b"2"),
    ("int(6),or(3)", b"7"),
    ("int(6),xor(3)", b"5"),
    ("int(6),cpl", b"-7"),
    ("int(3),odd", b"1"),
    ("int(3),even", b"0"),
    ("int(0),not", b"1"),
    ("int(2),bool", b"1"),
    ("str(a.b.c),field(2,.)", b"b"),
    ("str(a.b.c),field(-1,.)", b"c"),
    ("str(a.b.c),field(1,.,2)", b"a.b"),
    ("str(a.b.c),word(2,.)", b"b"),
    ("str(abc),bytes(1)", b"bc"),
    ("str(abcdef),bytes(1,3)", b"bcd"),
    ("str(  abc  ),ltrim(\\ )", b"abc  "),
    ("str(  abc  ),rtrim(\\ )", b"  abc"),
    ("ipv4(192.168.1.77),ipmask(24)", b"192.168.1.0"),
    ("ipv6(2001:db8::1),ipmask(24,64)", b"2001:db8::"),
    ("str(hello),crc32", b"907060870"),
    ("str(hello),crc32(1)", b"3902247103"),
    ("str(hello),crc32c", b"2591144780"),
    ("str(hello),djb2", b"261238937"),
    ("str(hello),sdbm", b"684824882"),
    ("str(hello),wt6", b"3538347703"),
    ("str(hello),xxh32", b"4211111929"),
    ("str(hello),xxh64", b"2794345569481354659"),
    ("str(hello),sha1,hex", b"AAF4C61DDCC5E8A2DABEDE0F3B482CD9AEA9434D"),
    ("str(hello),sha2,hex", b"2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824"),
    ("str(hello),sha2(512),hex", b"9B71D224BD62F3785D96D46AD3EA3D73319BFBC2890CAADAE2DFF72519673CA72323C3D99BA5C11D7C7ACC6E14B8C5DA0C4663475C2E5C3ADEF46F73BCDEC043"),
    ("str(hello),digest(md5),hex", b"5D41402ABC4B2A76B9719D911017C592"),
    ("str(hello),hmac(sha256,a2V5),hex", b"9307B3B915EFB5171FF14D8CB55FBCC798C6C0EF1456D66DED1A6AA723A58B7B"),
    ("str(hello),url_enc", b"hello"),
    ("str(a%20b%2),url_dec", b""),
    ("str(a+b),url_dec(1)", b"a b"),
    ("int(1000000000),http_date", b"Sun, 09 Sep 2001 01:46:40 GMT"),
    ("int(1000000000),utime(%Y-%m-%d)", b"2001-09-09"),
    ("str(abc),concat(x,,y)", b"abcxy"),
    ("str(12),be2dec(-,1)", b"49-50"),
    ("str(hello),be2hex(:,2)", b"6865:6C6C:6F"),
    ("str(Hello World),regsub(o,0,g)", b"Hell0 W0rld"),
    ("str(abc),strcmp(txn.none)", b""),
    ("str(1.2.3.4),ipmask(8)", b"1.0.0.0"),
    ("str(abc),hex2i", b"2748"),
    ("str(ff),hex2i", b"255"),
    ("str(10),hex2i", b"16"),
    ("int(65),htonl", b""),
    ("str(hello),ub64enc", b"aGVsbG8"),
    ("str(aGVsbG8),ub64dec", b"hello"),
    ("str(hello),protobuf(1)", b""),
    ("str(x),iif(a,b)", b"b"),
    ("int(0),iif(a,b)", b"b"),
    ("str(abcdef),cut_crlf", b"abcdef"),
    ("str(hello),sha2(224),hex", b"EA09AE9CC6768C50FCEE903ED054556E5BFC8347907F12598AA24193"),
    ("int(-5),add(10)", b"5"),
    ("str(  12  ),add(1)", b"1"),
    ("str(+5),add(1)", b"6"),
    ("str(99999999999999999999),add(1)", b"9223372036854775807"),
    ("bool(1)", b"1"),
    ("bool(0),not", b"1"),
    ("int(-3)", b"-3"),
    ("str(),length", b"0"),
    ("int(65),hex", b"0000000000000041"),
    ("int(65),htonl,hex", b"00000041"),
    ("int(-1),hex", b"FFFFFFFFFFFFFFFF"),
    ("int(3232235777),ipmask(16)", b"192.168.0.0"),
    ("str(::ffff:1.2.3.4),ipmask(8)", b"1.0.0.0"),
    ("ipv6(::ffff:1.2.3.4),ipmask(8)", b"1.0.0.0"),
    ("str(1.2.3),ipmask(8)", b""),
    ("str(1.2.3.4x),ipmask(8)", b"1.0.0.0"),
    ("ipv4(1.2.3.4),hex", b"01020304"),
    ("ipv6(::1),hex", b"00000000000000000000000000000001"),
    ("ipv4(1.2.3.4),add(1)", b"16909061"),
    ("bool(1),hex", b"0000000000000001"),
    ("str(abc),bool", b"0"),
    ("str(12),bool", b"1"),
    ("str(0),bool", b"0"),
    ("int(12),upper", b"12"),
    ("ipv4(1.2.3.4),upper", b"1.2.3.4"),
    ("bin(414243)", b"ABC"),
    ("bin(414243),lower", b"abc"),
    ("bin(41004243),length", b"1"),
    ("str(hello),length,add(1)", b"6"),
    ("meth(GET)", b"GET"),
    ("str(get),upper", b"GET"),
    ("int(5),mul(3),sub(1),div(2)", b"7"),
    ("str(abc),concat(,,)", b"abc"),
    ("str(abc),field(5,.)", b""),
    ("str(a..b),field(2,.)", b""),
    ("str(a..b),word(2,.)", b"b"),
    ("str(abc),bytes(5)", b""),
    ("str(abc),bytes(1,10)", b"bc"),
    ("int(9223372036854775807),add(1)", b"9223372036854775807"),
    ("int(-9223372036854775807),sub(10)", b"-9223372036854775808"),
    ("int(-9223372036854775808),neg", b"9223372036854775807"),
    ("int(3000000000),mul(4000000000)", b"9223372036854775807"),
    ("int(-7),div(2)", b"-3"),
    ("int(-7),mod(2)", b"-1"),
    ("str(a),regsub(a,\\1,)", b""),
    ("str(hello),regsub(l+,X)", b"heXo"),
    ("str(HeLLo),regsub(l,X,ig)", b"HeXXo"),
    ("str(abc),regsub(b,\\\\1)", b"ac"),
    ("str(AbC),lower,hex", b"616263"),
    ("str(x y),url_enc", b"x%20y"),
    ("str(a/b?c=d&e),url_enc", b"a%2Fb%3Fc%3Dd%26e"),
    ("str(%41%zz),url_dec", b""),
    ("str(%41%42),url_dec", b"AB"),
    ("str(héllo),length", b"6"),
    ("int(1),iif(yes,no)", b"yes"),
    ("str(),iif(yes,no)", b""),
    ("str(1),iif(yes,no)", b"yes"),
    ("int(1000000000),utime(%s %Y,3600)", b"1000003600 2001"),
    ("int(1000000000),http_date(3600)", b"Sun, 09 Sep 2001 02:46:40 GMT"),
    ("int(1000000000),http_date(0,ms)", b"Mon, 12 Jan 1970 13:46:40.0 GMT"),
    ("int(1000000123),http_date(0,ms)", b"Mon, 12 Jan 1970 13:46:40.123 GMT"),
    ("int(1000000000),http_date(0,us)", b"Thu, 01 Jan 1970 00:16:40.0 GMT"),
    ("int(1000000000),http_date(0,s)", b"Sun, 09 Sep 2001 01:46:40 GMT"),
    ("str(hello),digest(sha256),base64", b"LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="),
    ("str(aGVsbG8),b64dec", b""),
    ("str(aGVsbG8=x),b64dec", b""),
    ("str(abc),concat(\\x)", b"abc\x5cx"),
    ("str(abc),concat(\"x,y\")", b"abcx,y"),
    ("str(abc),concat('x)y')", b"abcx)y"),
    ("str(hello),xxh32(1)", b"4244634537"),
    ("str(hello),xxh64(1)", b"2584346877953614258"),
    ("str(hello),djb2(1)", b"1119739105"),
    ("str(a.b.c.d),field(2,.,0)", b"b.c.d"),
    ("str(a.b.c.d),field(-2,.,2)", b"b.c"),
    ("str(a.b.c.d),field(-2,.,0)", b"a.b.c"),
    ("str(hello),be2dec(:,2,1)", b"26725:27756"),
    ("str(hello),be2hex", b"68656C6C6F"),
    ("int(1),cpl", b"-2"),
    ("str,upper", b""),
    ("str(a),,upper", b"A"),
];

/// Captured expressions sluice refuses as not supported yet: each must be
/// refused that way (never run wrong), and the list shrinks as they land.
const NOT_YET: &[&str] = &["str(hello),protobuf(1)"];

#[test]
fn expressions_give_haproxys_bytes() {
    let cx = Ctx::default();
    let mut refused = Vec::new();
    let mut wrong = Vec::new();
    for (text, want) in CAPTURED {
        let (expr, used) = match Expr::parse(text) {
            Ok(e) => e,
            Err(ExprError::Unsupported(_)) => {
                refused.push(*text);
                continue;
            }
            Err(e) => panic!("{text}: {e}"),
        };
        assert_eq!(used, text.len(), "{text}");
        let mut got = Vec::new();
        if let Some(s) = expr.eval(&cx) {
            s.write_text(&mut got);
        }
        if got != *want {
            wrong.push(format!(
                "{text}: got {:?}, haproxy {:?}",
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(want)
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(refused, NOT_YET);
}

/// docs/configuration.md's table of every HAProxy 2.6 fetch and converter
/// is the one the registry makes (`SLUICE_WRITE_DOCS=1` rewrites it), and
/// the registry holds no keyword HAProxy 2.6 lacks.
#[test]
fn the_docs_table_is_the_registry() {
    use crate::haproxy26::{Kind, haproxy_has};
    let stray: Vec<&str> = super::fetch::all()
        .map(|f| f.name)
        .filter(|n| !haproxy_has(Kind::Fetch, n))
        .chain(
            super::conv::all()
                .map(|c| c.name)
                .filter(|n| !haproxy_has(Kind::Converter, n)),
        )
        .collect();
    assert!(stray.is_empty(), "not HAProxy 2.6 keywords: {stray:?}");
    // Each keyword is declared once, whatever table holds it.
    let mut seen = std::collections::HashSet::new();
    let mut twice: Vec<&str> = Vec::new();
    let names = super::fetch::all()
        .map(|f| ("fetch", f.name))
        .chain(super::conv::all().map(|c| ("conv", c.name)));
    for (kind, name) in names {
        if !seen.insert((kind, name)) {
            twice.push(name);
        }
    }
    assert!(twice.is_empty(), "declared twice: {twice:?}");
    const BEGIN: &str = "<!-- sample-table: generated from src/sample, do not edit -->\n";
    const END: &str = "<!-- sample-table end -->";
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/configuration.md");
    let doc = std::fs::read_to_string(path).expect("docs/configuration.md");
    let start = doc.find(BEGIN).expect("the table's start marker") + BEGIN.len();
    let end = start + doc[start..].find(END).expect("the table's end marker");
    let want = super::docs::table();
    if doc[start..end] != want && std::env::var_os("SLUICE_WRITE_DOCS").is_some() {
        let new = format!("{}{want}{}", &doc[..start], &doc[end..]);
        std::fs::write(path, new).expect("write docs/configuration.md");
        return;
    }
    assert!(
        doc[start..end] == want,
        "docs/configuration.md's sample table is not the registry's: run the test with SLUICE_WRITE_DOCS=1 and commit the page"
    );
}
