//! The sample language against the real HAProxy 2.6: the same
//! expressions are evaluated by haproxy and by sluice (each in an
//! `http-request return ... lf-string "[%[<expr>]]"`, one path per
//! expression) and the answers' bytes must be equal; the same faulty
//! expressions are checked by `haproxy -c` and `sluice -c` and the messages
//! must be equal (masking nothing: pid and paths are outside them).
//!
//! Dates are formatted in UTC here (`utime`, `http_date`) so that the
//! machine's time zone cannot matter; `ltime` is compared with the
//! process's time zone, which is the same for both.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use support::haproxy::{self, Haproxy, Pair};
use support::*;

/// Expressions evaluated by both, their answers compared byte for byte.
const EXPRS: &[&str] = &[
    "str(abc),upper",
    "str(ABC),lower",
    "str(hello),length",
    "str(hello),hex",
    "str(hello),base64",
    "str(aGVsbG8=),b64dec",
    "str(12),add(5)",
    "str(12abc),add(1)",
    "str(abc),add(1)",
    "str(-7),neg",
    "int(7),neg",
    "int(10),div(3)",
    "int(10),div(0)",
    "int(10),mod(3)",
    "int(10),mod(0)",
    "int(5),mul(-2)",
    "int(5),sub(7)",
    "int(6),and(3)",
    "int(6),or(3)",
    "int(6),xor(3)",
    "int(6),cpl",
    "int(3),odd",
    "int(3),even",
    "int(0),not",
    "int(2),bool",
    "str(a.b.c),field(2,.)",
    "str(a.b.c),field(-1,.)",
    "str(a.b.c),field(1,.,2)",
    "str(a.b.c),word(2,.)",
    "str(abc),bytes(1)",
    "str(abcdef),bytes(1,3)",
    r#"str(  abc  ),ltrim(\ )"#,
    r#"str(  abc  ),rtrim(\ )"#,
    "ipv4(192.168.1.77),ipmask(24)",
    "ipv6(2001:db8::1),ipmask(24,64)",
    "str(hello),crc32",
    "str(hello),crc32(1)",
    "str(hello),crc32c",
    "str(hello),djb2",
    "str(hello),sdbm",
    "str(hello),wt6",
    "str(hello),xxh32",
    "str(hello),xxh64",
    "str(hello),sha1,hex",
    "str(hello),sha2,hex",
    "str(hello),sha2(512),hex",
    "str(hello),digest(md5),hex",
    "str(hello),hmac(sha256,a2V5),hex",
    // AES-GCM (vectors made with Python's `cryptography`: key bytes 0..n,
    // nonce bytes 0..12, plain text "hello world"), with each key size, a
    // tag cut to 15 bytes, a wrong tag, a key of the wrong size, and the
    // nonce, key and tag from variables (base64 text there too).
    "str(+wnLogk7gDs5vgU=),b64dec,aes_gcm_dec(128,AAECAwQFBgcICQoL,AAECAwQFBgcICQoLDA0ODw==,SbCF5jLkilmZu4QnEjVlbQ==)",
    "str(jpxO9/aZvmGiX7g=),b64dec,aes_gcm_dec(192,AAECAwQFBgcICQoL,AAECAwQFBgcICQoLDA0ODxAREhMUFRYX,5W7Eep0rqALMr+PYm62ZmA==)",
    "str(L2e6d6rFtXT/LfM=),b64dec,aes_gcm_dec(256,AAECAwQFBgcICQoL,AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=,BTAcVkN+I3e5jvOWHCcZKA==)",
    "str(+wnLogk7gDs5vgU=),b64dec,aes_gcm_dec(128,AAECAwQFBgcICQoL,AAECAwQFBgcICQoLDA0ODw==,SbCF5jLkilmZu4QnEjVl),hex",
    "str(+wnLogk7gDs5vgU=),b64dec,aes_gcm_dec(128,AAECAwQFBgcICQoL,AAECAwQFBgcICQoLDA0ODw==,SbCF5jLkilmZu4QnEjVlbA==),length",
    "str(+wnLogk7gDs5vgU=),b64dec,aes_gcm_dec(256,AAECAwQFBgcICQoL,AAECAwQFBgcICQoLDA0ODw==,SbCF5jLkilmZu4QnEjVlbQ==),length",
    "str(+wnLogk7gDs5vgU=),b64dec,aes_gcm_dec(128,txn.gcm_n,txn.gcm_k,txn.gcm_t)",
    "str(+wnLogk7gDs5vgU=),b64dec,aes_gcm_dec(128,txn.gcm_n,txn.unset,txn.gcm_t),length",
    "str(xsf9+bnspq2S3Q=),b64dec,aes_gcm_dec(128,AAECAwQFBgcICQoLDA0ODw==,AAECAwQFBgcICQoLDA0ODw==,qsqvKP/rydH2BH9V+aMMdw==),length",
    "str(hello),url_enc",
    "str(a%20b%2),url_dec",
    "str(a+b),url_dec(1)",
    "int(1000000000),http_date",
    "int(1000000000),utime(%Y-%m-%d)",
    "str(abc),concat(x,,y)",
    "str(12),be2dec(-,1)",
    "str(hello),be2hex(:,2)",
    "str(Hello World),regsub(o,0,g)",
    "str(1.2.3.4),ipmask(8)",
    "str(abc),hex2i",
    "str(ff),hex2i",
    "str(10),hex2i",
    "int(65),htonl",
    "str(hello),ub64enc",
    "str(aGVsbG8),ub64dec",
    "str(x),iif(a,b)",
    "int(0),iif(a,b)",
    "str(abcdef),cut_crlf",
    "str(hello),sha2(224),hex",
    "int(-5),add(10)",
    "str(  12  ),add(1)",
    "str(+5),add(1)",
    "str(99999999999999999999),add(1)",
    "bool(1)",
    "bool(0),not",
    "int(-3)",
    "str(),length",
    "int(65),hex",
    "int(65),htonl,hex",
    "int(-1),hex",
    "int(3232235777),ipmask(16)",
    "str(::ffff:1.2.3.4),ipmask(8)",
    "ipv6(::ffff:1.2.3.4),ipmask(8)",
    "str(1.2.3),ipmask(8)",
    "str(1.2.3.4x),ipmask(8)",
    "ipv4(1.2.3.4),hex",
    "ipv6(::1),hex",
    "ipv4(1.2.3.4),add(1)",
    "bool(1),hex",
    "str(abc),bool",
    "str(12),bool",
    "str(0),bool",
    "int(12),upper",
    "ipv4(1.2.3.4),upper",
    "bin(414243)",
    "bin(414243),lower",
    "bin(41004243),length",
    "str(hello),length,add(1)",
    "meth(GET)",
    "str(get),upper",
    "int(5),mul(3),sub(1),div(2)",
    "str(abc),concat(,,)",
    "str(abc),field(5,.)",
    "str(a..b),field(2,.)",
    "str(a..b),word(2,.)",
    "str(abc),bytes(5)",
    "str(abc),bytes(1,10)",
    "int(9223372036854775807),add(1)",
    "int(-9223372036854775807),sub(10)",
    "int(-9223372036854775808),neg",
    "int(3000000000),mul(4000000000)",
    "int(-7),div(2)",
    "int(-7),mod(2)",
    r#"str(a),regsub(a,\1,)"#,
    "str(hello),regsub(l+,X)",
    "str(HeLLo),regsub(l,X,ig)",
    r#"str(abc),regsub(b,\\1)"#,
    "str(AbC),lower,hex",
    "str(x y),url_enc",
    "str(a/b?c=d&e),url_enc",
    "str(%41%zz),url_dec",
    "str(%41%42),url_dec",
    "str(héllo),length",
    "int(1),iif(yes,no)",
    "str(),iif(yes,no)",
    "str(1),iif(yes,no)",
    "int(1000000000),utime(%s %Y,3600)",
    "int(1000000000),http_date(3600)",
    "int(1000000000),http_date(0,ms)",
    "int(1000000123),http_date(0,ms)",
    "int(1000000000),http_date(0,us)",
    "int(1000000000),http_date(0,s)",
    "str(hello),digest(sha256),base64",
    "str(aGVsbG8),b64dec",
    "str(aGVsbG8=x),b64dec",
    r#"str(abc),concat(\x)"#,
    r#"str(abc),concat("x,y")"#,
    "str(abc),concat('x)y')",
    "str(hello),xxh32(1)",
    "str(hello),xxh64(1)",
    "str(hello),djb2(1)",
    "str(a.b.c.d),field(2,.,0)",
    "str(a.b.c.d),field(-2,.,2)",
    "str(a.b.c.d),field(-2,.,0)",
    "str(hello),be2dec(:,2,1)",
    "str(hello),be2hex",
    "int(1),cpl",
    "str,upper",
    "str(a),,upper",
    // Control characters but the tab, and DEL, come out as `%XX`.
    "bin(01090A0D1F207F80FF25)",
    // `txn.cmp` is "hello" (set first by `config`); `txn.none` is unset.
    "str(hello),strcmp(txn.cmp)",
    "str(abc),strcmp(txn.cmp)",
    "str(zzz),strcmp(txn.cmp)",
    "str(hell),strcmp(txn.cmp)",
    "str(helloo),strcmp(txn.cmp)",
    "str(hello),strcmp(txn.none)",
    "int(5),strcmp(txn.cmp)",
    "str(hello),secure_memcmp(txn.cmp)",
    "str(hellp),secure_memcmp(txn.cmp)",
    "str(hell),secure_memcmp(txn.cmp)",
    "str(hello),secure_memcmp(txn.none)",
    "bin(61225C63),json",
    "bin(61225C63),json(utf8)",
    "str(é/x),json(utf8s)",
    "str(é/x),json(ascii)",
    "bin(01090A0D1F207F80FF),json",
    "bin(01090A0D1F207F80FF),json(utf8)",
    "bin(01090A0D1F207F80FF),json(utf8s)",
    "bin(01090A0D1F207F80FF),json(utf8p)",
    "bin(01090A0D1F207F80FF),json(utf8ps)",
    "bin(C3A9E282AC),json(ascii)",
    "bin(C3A9E282AC),json(utf8)",
    "bin(3C613E2726),json",
    "bin(0809200C5C2F22),json",
    "bin(F09F9880),json(utf8)",
    "bin(F09F9880),json(utf8s)",
    "bin(C3A9E2),json(utf8p)",
    "bin(C3A9E2),json(utf8ps)",
    "bin(C0AF41),json(utf8)",
    "bin(C0AF41),json(utf8p)",
    "bin(C0AF41),json(utf8s)",
    "bin(EDA08041),json(utf8ps)",
    "str(hello),xxh3",
    "str(hello),xxh3(1)",
    "str(),xxh3",
    "str(a),add_item(-,txn.cmp)",
    "str(a),add_item(-,txn.none)",
    "str(a),add_item(-,txn.none,suf)",
    "str(a),add_item(-,,suf)",
    "str(a),add_item(-,txn.cmp,suf)",
    "str(),add_item(-,txn.cmp,suf)",
    "str(),add_item(-,txn.none)",
    "str(),add_item(-,,suf)",
    "str(hello),debug",
    "int(5),debug,add(1)",
    "str('en-US;q=0.8,fr;q=0.9'),language(en;fr)",
    "str('en-US;q=0.8,fr;q=0.9'),language(es)",
    "str('en-US;q=0.8,fr;q=0.9'),language(es,de)",
    "str('en-US,fr'),language(en;fr)",
    "str('en-US,fr'),language(en-US;en;fr)",
    "str('fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5'),language(de;es)",
    "str('*;q=0.5'),language(de;es)",
    "str('*'),language(de;es,fr)",
    "str('en;q=0'),language(en;fr)",
    "str('EN'),language(en;fr)",
    "str('en-us'),language(en-US;fr)",
    "str('en'),language(en-US;fr)",
    "str('de;q=0.7,en;q=0.70'),language(en;de)",
    "str('de ; q=0.5 , es;q=1'),language(de;es)",
    "str('de;q=0.5,es;q=0.25'),language(de;es)",
    "str('de;q=1.5'),language(de;es)",
    r#"str('{"a":1,"b":{"c":"x"},"arr":[10,"y",true]}'),json_query($.a)"#,
    r#"str('{"a":1,"b":{"c":"x"},"arr":[10,"y",true]}'),json_query($.b.c)"#,
    r#"str('{"a":1,"b":{"c":"x"},"arr":[10,"y",true]}'),json_query($.b)"#,
    r#"str('{"a":1,"b":{"c":"x"},"arr":[10,"y",true]}'),json_query($.arr[0])"#,
    r#"str('{"a":1,"b":{"c":"x"},"arr":[10,"y",true]}'),json_query($.arr[1])"#,
    r#"str('{"a":1,"b":{"c":"x"},"arr":[10,"y",true]}'),json_query($.arr[2])"#,
    r#"str('{"a":1,"b":{"c":"x"},"arr":[10,"y",true]}'),json_query($.arr)"#,
    r#"str('{"a":1,"b":{"c":"x"},"arr":[10,"y",true]}'),json_query($.nope)"#,
    r#"str('{"a":1,"b":{"c":"x"},"arr":[10,"y",true]}'),json_query($)"#,
    r#"str('{"a":1.5}'),json_query($.a)"#,
    r#"str('{"a":1.5}'),json_query($.a,int)"#,
    r#"str('{"a":"7"}'),json_query($.a,int)"#,
    r#"str('{"a":7}'),json_query($.a,int)"#,
    r#"str('{"a":-7}'),json_query($.a,int)"#,
    r#"str('{"a":null}'),json_query($.a)"#,
    r#"str('{"a":false}'),json_query($.a)"#,
    r#"str('{"a":"x\"y\u00e9"}'),json_query($.a)"#,
    r#"str('{"a":1e3}'),json_query($.a)"#,
    r#"str('{"a":1e3}'),json_query($.a,int)"#,
    r#"str('{"a":99999999999999999999}'),json_query($.a,int)"#,
    r#"str('{"a":99999999999999999999}'),json_query($.a)"#,
    r#"str('{"a":0.1}'),json_query($.a)"#,
    r#"str('{"a":1234567.5}'),json_query($.a)"#,
    r#"str('{"a":"\u0100"}'),json_query($.a)"#,
    r#"str('{"a":[1,[2,3]]}'),json_query($.a[1][0])"#,
    r#"str('{"a":"12abc"}'),json_query($.a,int)"#,
    r#"str('{"a":true}'),json_query($.a,int)"#,
    r#"str('{"a":1,"a":2}'),json_query($.a)"#,
    r#"str('{"a":1}x'),json_query($.a)"#,
    r#"str('{"a":1'),json_query($.a)"#,
    r#"str('{"a": 1 , "b" : [ 1 , 2 ] }'),json_query($.b[1])"#,
    r#"str('{"a.b":1}'),json_query($.a.b)"#,
    r#"str('{"a":{"b":2}}'),json_query($['a'])"#,
    r#"str('{"a":"x\/\n"}'),json_query($.a)"#,
    r#"str('{"a":"x\ty\n"}'),json_query($.a)"#,
    "str(notjson),json_query($.a)",
];

/// Fetches of the request, evaluated by both on the same two requests (an
/// absolute URL, then a path), compared byte for byte.
const REQUEST_FETCHES: &[&str] = &[
    "always_true",
    "always_false",
    "env(PATH)",
    "env(SLUICE_NO_SUCH_VARIABLE)",
    "hostname",
    "proc",
    // One possible value: no mask needed.
    "rand(1)",
    // The text differs between runs, never its length.
    "uuid,length",
    "uuid(4),length",
    "pathq",
    "url_param(a)",
    "urlp(b)",
    "urlp(c,;)",
    "urlp",
    "urlp(zz)",
    "urlp_val(a)",
    "url_port",
    "url_ip",
    "base32",
    "base32+src,hex",
    "baseq",
    "url32",
    "url32+src,hex",
    "req.hdrs",
    "req.hdrs_bin,hex",
    "req.hdr_names",
    "req.hdr_names(;)",
    "cook(a)",
    "req.cook(b)",
    "req.cook",
    "req.cook(zz)",
    "req.cook_cnt(a)",
    "req.cook_cnt",
    "req.cook_val(a)",
    "cook_cnt(a)",
    "cook_val",
    "hdr_ip(x-ip)",
    "req.hdr_ip(x-ip6)",
    "req.hdr_ip(x-n)",
    "hdr_val(x-n)",
    "req.hdr_val(x-n)",
    "hdr_cnt(cookie)",
    "hdr(x-n)",
    "req.proto_http",
    "req_proto_http",
    "fe_id",
    "src_port,bool",
    "http_first_req",
    "dst",
    "dst_port,bool",
    "stopping",
    "src_is_local",
    "dst_is_local",
    "fc_err",
    "fc_err_str",
    // The TLS ones on a cleartext connection: none.
    "ssl_fc",
    "ssl_fc_err",
    "ssl_fc_err_str",
    "ssl_fc_has_early",
    "ssl_fc_npn",
    "ssl_fc_protocol_hello_id",
    "ssl_fc_cipherlist_xxh",
    "cookie(a)",
    "cookie(c)",
    "cookie",
    "fe_defbe",
    "fe_client_timeout",
    // The layer 6 ones in an HTTP proxy's rules: no content there.
    "req_len",
    "req.len",
    "req.rdp_cookie_cnt",
    "wait_end",
];

/// The two requests of [`REQUEST_FETCHES`], for path `/<n>`.
fn rich_requests(n: usize) -> [String; 2] {
    // The Host of an absolute URL must be its authority (HAProxy 2.6
    // refuses the request otherwise).
    let headers = "host: 1.2.3.4:8080\r\ncookie: a=1; b=2\r\ncookie: a=3 ; c=\r\nx-ip: 1.2.3.4\r\nx-ip6: 2001:db8::1\r\nx-n: 42abc\r\n\r\n";
    [
        format!("GET http://1.2.3.4:8080/{n}?a=7&b=2;c=3 HTTP/1.1\r\n{headers}"),
        format!("GET /{n}?b=5 HTTP/1.1\r\n{headers}"),
    ]
}

/// Fetches whose values differ between runs by design (random, time):
/// each answer of both must have the shape the check says, with the reason.
const SHAPED: &[(&str, &str)] = &[
    // A fresh version 4 UUID per call.
    ("uuid", "uuid"),
    // A random number: 0 to 2^32 - 1, or below the range given.
    ("rand", "below:4294967296"),
    ("rand(10)", "below:10"),
    // The time of the request: within a minute of the test's clock.
    ("date", "now:1"),
    ("date(3600)", "now+3600:1"),
    ("date(0,ms)", "now:1000"),
    ("date(0,us)", "now:1000000"),
    // The microseconds of the date.
    ("date_us", "below:1000000"),
    // Each listens on a port of its own: the one the client reached.
    ("dst_port", "port"),
];

fn has_shape(v: &str, shape: &str, port: u16) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i128;
    let n: Option<i128> = v.parse().ok();
    match shape.split_once(':') {
        None if shape == "port" => n == Some(i128::from(port)),
        None => {
            let parts: Vec<&str> = v.split('-').collect();
            parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
                && v.bytes()
                    .all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                && parts[2].starts_with('4')
                && matches!(&parts[3][..1], "8" | "9" | "a" | "b")
        }
        Some(("below", max)) => n.is_some_and(|n| (0..max.parse().unwrap_or(0)).contains(&n)),
        Some((base, unit)) => {
            let unit: i128 = unit.parse().unwrap_or(1);
            let off: i128 = base
                .strip_prefix("now+")
                .map_or(0, |o| o.parse().unwrap_or(0));
            n.is_some_and(|n| (n / unit - now - off).abs() <= 60)
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_and_time_fetches_have_their_shape() {
    if !haproxy::available() {
        return;
    }
    let exprs: Vec<&str> = SHAPED.iter().map(|(e, _)| *e).collect();
    let fronts = listens(2);
    let _hap = Haproxy::start(
        "sample-shape-hap",
        &config(&fronts[0].to_string(), &exprs),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&config(&fronts[1].to_string(), &exprs));
    let mut wrong = Vec::new();
    for (i, (e, shape)) in SHAPED.iter().enumerate() {
        let mut seen = Vec::new();
        for (who, front) in [("haproxy", &fronts[0]), ("sluice", &fronts[1])] {
            let r = get(front.addr(), &format!("/{i}")).await;
            let body = String::from_utf8_lossy(&r.body).into_owned();
            let v = body
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string();
            if r.status != 200 || !has_shape(&v, shape, front.port()) {
                wrong.push(format!(
                    "{e}: {who} gave {} {body:?}, not {shape}",
                    r.status
                ));
            }
            seen.push(v);
        }
        // Two UUIDs are never equal.
        if *shape == "uuid" && seen[0] == seen[1] {
            wrong.push(format!("{e}: the same value twice"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Expressions both refuse, with the same message.
const FAULTY: &[&str] = &[
    // Without parentheses a converter's arguments are those of `name()`;
    // an empty argument that is no string is missing, or ends the list.
    "str(a),field",
    "str(a),hmac",
    "str(a),iif",
    "str(a),add_item",
    "str(a),add_item(x)",
    "str(a),add_item(,)",
    "str(a),unset-var",
    "str(a),ipmask",
    "str(a),ipmask()",
    "str(a),ipmask(24,)",
    "str(a),add()",
    "str(a),strcmp()",
    "str(a),be2dec",
    "str(a),be2dec(-,9)",
    "str(a),be2hex(:,0)",
    "str(a),be2hex(,)",
    "str(a),field(1,)",
    "str(a),field(,x)",
    "str(a),http_date(,)",
    "str(a),crc32(,)",
    "str(a),crc32",
    "str(a),aes_gcm_dec(100,AAAA,AAAA,AAAA)",
    "str(a),aes_gcm_dec(128,@@,AAAA,AAAA)",
    "str(a),aes_gcm_dec(128,AAAA,@@,AAAA)",
    "str(a),aes_gcm_dec(128,AAAA,AAAA,@@)",
    "str(a),aes_gcm_dec(128,AAA,AAAA,AAAA)",
    "str(a),aes_gcm_dec(abc,AAAA,AAAA,AAAA)",
    "str(a),aes_gcm_dec(128,AAAA,AAAA)",
    "str(a),json(foo)",
    "str(a),json_query($.a,str)",
    "str(a),json_query",
    "str(a),strcmp(foo)",
    "str(a),strcmp",
    "str(a),secure_memcmp(foo)",
    "str(a),language",
    "str(a),add_item(-,foo)",
    "str(a),field(1)",
    "str(a),field(1,.,2,3)",
    "str(a),field(x,.)",
    "str(a),bytes(a)",
    "str(a),nosuch",
    // Named by the manual, unknown to the 2.6 binary.
    "str(a),map_str_str(/nonexistent)",
    "str(a),map_ip_str(/nonexistent)",
    "str(a),map_len(/nonexistent)",
    "str(a),map_len_int(/nonexistent)",
    "str(a),map_regm_int(/nonexistent)",
    "str(a),da-csv-conv(a)",
    "set-cookie(a)",
    "str(a),capture-req(x)",
    "str(a),capture-req",
    "str(a),capture-res()",
    "str(a),nbsrv(x)",
    "str(a),srv_queue(x)",
    "nosuch",
    "str(a),add",
    "str(a),ipmask(33)",
    "str(a),ipmask(8,129)",
    "str(a),hmac(sha256,!!)",
    "str(a),sha2(100)",
    "req.hdr",
    "hdr()",
    "str",
    "int(a)",
    "int(99999999999999999999)",
    "ipv4(1.2.3)",
    "str(a),lower(x)",
    "str(a),upper,",
    "str(a),,upper",
    "str(a) ,upper",
    "str(a),crc32(x)",
    "str(a),url_dec(x)",
    "str(a),utime",
    "int(1),http_date(x)",
    "str(a),iif(a)",
    "str(a),concat(a,b,c,d)",
    "str(a),add(foo.x)",
    "str(a,b)",
    "int(1),ipmask(8)",
    "str(a),length(1)",
    "bin(4g)",
    "meth(G ET)",
    "str(a),word(1,)",
    "str(a),ltrim",
    // Fetches that cannot work in an `http-request` rule of a frontend.
    "res.hdr(x)",
    "status",
    "be_name",
    "srv_name",
    "res.cook(a)",
    "res.ver",
    "shdr(x)",
    // Arguments of the fetches.
    "req.payload_lv(0,1,x)",
    "uuid(3)",
    "uuid(x)",
    "date(1,x)",
    "req.payload(0)",
];

fn config(bind: &str, exprs: &[&str]) -> String {
    let mut cfg = format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    http-request set-var(txn.cmp) str(hello)
    http-request set-var(txn.gcm_n) str(AAECAwQFBgcICQoL)
    http-request set-var(txn.gcm_k) str(AAECAwQFBgcICQoLDA0ODw==)
    http-request set-var(txn.gcm_t) str(SbCF5jLkilmZu4QnEjVlbQ==)
"
    );
    for (i, e) in exprs.iter().enumerate() {
        // The config lexer reads `\\` and `\"` inside double quotes.
        // `$` would start an environment variable there.
        let quoted = e
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('$', "\\$");
        cfg.push_str(&format!(
            "    http-request return status 200 content-type text/plain lf-string \"[%[{quoted}]]\" if {{ path /{i} }}\n"
        ));
    }
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expressions_give_haproxys_bytes() {
    if !haproxy::available() {
        return;
    }
    let fronts = listens(2);
    let _hap = Haproxy::start(
        "sample-hap",
        &config(&fronts[0].to_string(), EXPRS),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&config(&fronts[1].to_string(), EXPRS));
    let mut differ = Vec::new();
    for (i, e) in EXPRS.iter().enumerate() {
        let path = format!("/{i}");
        let h = get(fronts[0].addr(), &path).await;
        let s = get(fronts[1].addr(), &path).await;
        differ.extend(haproxy::answer_differs(e, &h, &s));
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_fetches_give_haproxys_bytes() {
    if !haproxy::available() {
        return;
    }
    let fronts = listens(2);
    let _hap = Haproxy::start(
        "sample-req-hap",
        &config(&fronts[0].to_string(), REQUEST_FETCHES),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&config(&fronts[1].to_string(), REQUEST_FETCHES));
    let mut differ = Vec::new();
    for (i, e) in REQUEST_FETCHES.iter().enumerate() {
        for req in rich_requests(i) {
            let got = haproxy::answers_to(&fronts, req.as_bytes()).await;
            let (h, s) = (&got[0], &got[1]);
            let label = format!("{e} ({})", req.lines().next().unwrap_or(""));
            differ.extend(haproxy::answer_differs(&label, h, s));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn faulty_expressions_get_haproxys_messages() {
    if !haproxy::available() {
        return;
    }
    let cases = FAULTY
        .iter()
        .map(|e| (e.to_string(), config("127.0.0.1:1", &[e])));
    haproxy::assert_check_agrees("sample-check", cases, haproxy::first_alert);
}

/// A log line made of sample expressions only (no dates, no ports: what
/// must differ is left out), from haproxy and from sluice for the same
/// request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_lines_give_haproxys_bytes() {
    if !haproxy::available() {
        return;
    }
    // HAProxy 2.6 refuses the request-header fetches (req.hdr, path, url...)
    // in a log format: they are not available when the line is written.
    const FORMAT: &str = "%[src] %[dst] %[str(%zz),url_dec] %{+Q}[str(%zz),url_dec] \
        %{+Q}[method] %[method,lower] %[str(hello),sha1,hex] %[be_name] %[fe_name] \
        %[srv_name] %[status] %[status,div(100),mul(100)] %[str(),length] %[bin(41004243)] \
        %[src,ipmask(16)] %[str(a.b.c),field(2,.)] %[fe_id] %[be_id] %[srv_id]";
    let cfg = |bind: &str, log: &str| {
        format!(
            "global
    log {log} format raw local0 info
defaults
    mode http
    log global
    # The readiness probe's empty connection is not logged.
    option dontlognull
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    log-format \"{FORMAT}\"
    http-request return status 200
"
        )
    };
    let fronts = listens(2);
    let (hlog, slog) = (
        support::syslog::Syslog::new(),
        support::syslog::Syslog::new(),
    );
    let _hap = Haproxy::start(
        "sample-log",
        &cfg(&fronts[0].to_string(), &hlog.addr()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&cfg(&fronts[1].to_string(), &slog.addr()));
    let mut lines = Vec::new();
    for (front, log) in [(&fronts[0], &hlog), (&fronts[1], &slog)] {
        let mut conn = HttpConn::connect(front.addr()).await;
        let r = conn
            .raw(
                b"GET /a/b%20c?q=1 HTTP/1.1\r\nhost: Example.ORG\r\nx-n: 5\r\nx-list: a, b\r\nx-list: c\r\n\r\n",
                false,
            )
            .await
            .expect("request");
        assert_eq!(r.status, 200);
        lines.push(log.take(1).remove(0));
    }
    assert_eq!(lines[1], lines[0], "sluice's line, then haproxy's");
}

/// Fetches of the response, each in an `http-response set-header` of its
/// own (`x-o<n>`), evaluated by both on the same server answer.
const RESPONSE_FETCHES: &[&str] = &[
    "res.cook(a)",
    "res.cook(b)",
    "res.cook",
    "res.cook(zz)",
    "res.cook_cnt(a)",
    "res.cook_cnt",
    "res.cook_val(a)",
    "scook(b)",
    "scook_cnt",
    "scook_val(a)",
    "res.ver",
    "resp_ver",
    "shdr(x-n)",
    "shdr_cnt(set-cookie)",
    "shdr_ip(x-ip)",
    "shdr_val(x-n)",
    "res.fhdr_cnt(set-cookie)",
    "res.fhdr(set-cookie)",
    "res.fhdr(set-cookie,1)",
    "res.fhdr(set-cookie,-2)",
    "res.hdr_cnt(set-cookie)",
    "res.hdr_ip(x-ip)",
    "res.hdr_val(x-n)",
    // In a response rule, `hdr` reads the response.
    "hdr(x-n)",
    "status",
    "fe_name",
    "be_name",
    "srv_name",
    "fe_id",
    "be_id",
    "srv_id",
    // What stays of the request is still there.
    "method",
    "cookie(a)",
    "cookie(b)",
    "capture.res.ver",
    "be_server_timeout",
    "cur_server_timeout",
    "cur_tunnel_timeout",
];

/// Fetches of the whole header block, each alone in its config: HAProxy's
/// later `http-response` rules see the headers earlier ones set, sluice's
/// see the server's (it applies the edits after the last rule).
const RESPONSE_BLOCK_FETCHES: &[&str] = &[
    "res.hdr_cnt",
    "res.hdr_names",
    "res.hdr_names(;)",
    "res.hdrs",
    "res.hdrs_bin,hex",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_fetches_give_haproxys_bytes() {
    if !haproxy::available() {
        return;
    }
    let mut differ = response_differences(RESPONSE_FETCHES).await;
    for e in RESPONSE_BLOCK_FETCHES {
        differ.extend(response_differences(&[e]).await);
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Runs `exprs` in `http-response set-header` rules under both and lists
/// the answers that differ.
async fn response_differences(exprs: &[&str]) -> Vec<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = tcp_server(|mut s| async move {
        let mut buf = vec![0u8; 4096];
        let mut got = Vec::new();
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        let _ = s
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nSet-Cookie: a=1; Path=/\r\nSet-Cookie: b=2\r\nset-cookie: a=3; HttpOnly\r\nX-N: 7x\r\nX-Ip: 10.0.0.1\r\n\r\nok",
            )
            .await;
    })
    .await;
    let cfg = |bind: &str| {
        let mut cfg = format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    default_backend be
backend be
    server s1 {server}
"
        );
        for (i, e) in exprs.iter().enumerate() {
            cfg.push_str(&format!(
                "    http-response set-header x-o{i} \"[%[{e}]]\"\n"
            ));
        }
        cfg
    };
    let fronts = listens(2);
    let _hap = Haproxy::start(
        "sample-res-hap",
        &cfg(&fronts[0].to_string()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&cfg(&fronts[1].to_string()));
    let (h, s) = (
        get(fronts[0].addr(), "/").await,
        get(fronts[1].addr(), "/").await,
    );
    assert_eq!(h.status, 200, "haproxy");
    let mut differ = Vec::new();
    for (i, e) in exprs.iter().enumerate() {
        let name = format!("x-o{i}");
        if s.header(&name) != h.header(&name) {
            differ.push(format!(
                "{e}: haproxy {:?}, sluice {:?}",
                h.header(&name),
                s.header(&name)
            ));
        }
    }
    differ
}

/// Behind a PROXY header, the addresses are the ones it names, in both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addresses_come_from_the_proxy_header() {
    if !haproxy::available() {
        return;
    }
    const ADDRS: &[&str] = &[
        "src",
        "src_port",
        "dst",
        "dst_port",
        "base32+src,hex",
        "src_is_local",
        "dst_is_local",
    ];
    let cfg = |bind: &str| config(&format!("{bind} accept-proxy"), ADDRS);
    let fronts = listens(2);
    let _hap = Haproxy::start("sample-pp-hap", &cfg(&fronts[0].to_string()), &[&fronts[0]]);
    let _sl = Sluice::start(&cfg(&fronts[1].to_string()));
    let mut differ = Vec::new();
    for (i, e) in ADDRS.iter().enumerate() {
        let req = format!(
            "PROXY TCP4 192.0.2.7 198.51.100.9 40001 8443\r\nGET /{i} HTTP/1.1\r\nhost: h\r\n\r\n"
        );
        let got = haproxy::answers_to(&fronts, req.as_bytes()).await;
        differ.extend(haproxy::answer_differs(e, &got[0], &got[1]));
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// The fetches of the proxies' runtime state, in a backend's rules (their
/// current backend) and naming other backends, under both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_state_fetches_give_haproxys_bytes() {
    if !haproxy::available() {
        return;
    }
    const STATE: &[&str] = &[
        "nbsrv",
        "nbsrv(only_backups)",
        "nbsrv(all_backups)",
        "queue",
        "queue(only_backups)",
        "srv_is_up(s1)",
        "srv_is_up(be/s3)",
        "srv_is_up(only_backups/b1)",
        "srv_conn(be/s1)",
        "srv_queue(s2)",
        "be_conn(only_backups)",
        "srv_weight(s1)",
        "srv_uweight(s1)",
        "srv_iweight(s1)",
        "srv_weight(be/s2)",
        "srv_uweight(be/s2)",
        "srv_weight(be/s3)",
        "srv_iweight(be/s3)",
        "srv_conn_free(s1)",
        "srv_conn_free(be/s2)",
        "be_conn_free",
        "be_conn_free(only_backups)",
        "fe_conn(fe)",
        // Nothing reached the backends and servers yet, nor the idle
        // frontend.
        "be_sess_rate(only_backups)",
        "fe_sess_rate(idle)",
        "fe_req_rate(idle)",
        "srv_sess_rate(be/s2)",
        "avg_queue",
        "avg_queue(only_backups)",
        "connslots",
        "connslots(slots)",
        "connslots(only_backups)",
        "fe_defbe",
        "fe_client_timeout",
        "be_server_timeout",
        "be_tunnel_timeout",
        "cur_server_timeout",
        "cur_tunnel_timeout",
        // The converters naming a backend or server by their input.
        "str(only_backups),nbsrv",
        "str(all_backups),nbsrv",
        "str(be),nbsrv",
        "str(nope),nbsrv",
        "str(be/s2),srv_queue",
        "str(s1),srv_queue",
        "str(nope/s1),srv_queue",
        "str(be/nope),srv_queue",
    ];
    // The same state in ACL conditions.
    const CONDITIONS: &[&str] = &[
        "nbsrv(only_backups) eq 2",
        "nbsrv gt 1",
        "srv_is_up(be/s3)",
        "be_conn(be) ge 1",
        "connslots(slots) eq 22",
        "queue(be) eq 0",
        "str(be),nbsrv gt 1",
    ];
    // No checks: the servers are UP without being reached; s3 is in
    // maintenance from the start.
    let cfg = |bind: &str| {
        let mut cfg = format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    default_backend be
frontend idle
    default_backend be
backend only_backups
    server b1 127.0.0.1:9 backup
    server b2 127.0.0.1:9 backup
backend all_backups
    option allbackups
    server b1 127.0.0.1:9 backup
    server b2 127.0.0.1:9 backup
backend slots
    server s1 127.0.0.1:9 maxconn 10 maxqueue 5
    server s2 127.0.0.1:9 maxconn 3 maxqueue 4
    server s3 127.0.0.1:9 disabled
backend be
    timeout server 9s
    timeout tunnel 11s
    server s1 127.0.0.1:9
    server s2 127.0.0.1:9 weight 30 maxconn 12
    server s3 127.0.0.1:9 disabled weight 7
"
        );
        for (i, c) in CONDITIONS.iter().enumerate() {
            cfg.push_str(&format!(
                "    http-request return status 200 content-type text/plain string yes if {{ path /c{i} }} {{ {c} }}\n    http-request return status 200 content-type text/plain string no if {{ path /c{i} }}\n"
            ));
        }
        cfg.push_str(&haproxy::return_rules(STATE));
        cfg
    };
    let fronts = listens(2);
    let _hap = Haproxy::start("sample-rt-hap", &cfg(&fronts[0].to_string()), &[&fronts[0]]);
    let _sl = Sluice::start(&cfg(&fronts[1].to_string()));
    let mut differ = Vec::new();
    let cases = (STATE
        .iter()
        .enumerate()
        .map(|(i, e)| (format!("/{i}"), e.to_string())))
    .chain(
        (CONDITIONS.iter().enumerate()).map(|(i, c)| (format!("/c{i}"), format!("if {{ {c} }}"))),
    );
    for (path, e) in cases {
        let e = e.as_str();
        // Counts of live connections (`fe_conn`) include the previous
        // request's connection until each proxy has seen it close: a
        // difference is asked again until both have settled (bounded).
        let mut last = None;
        for _ in 0..20 {
            let (h, s) = (
                get(fronts[0].addr(), &path).await,
                get(fronts[1].addr(), &path).await,
            );
            last = haproxy::answer_differs(e, &h, &s);
            if last.is_none() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        differ.extend(last);
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// `capture-req` and `capture-res`: the input goes to the frontend's
/// capture slot (cut to its length) and on unchanged; a slot the frontend
/// lacks fails the converter (the variable stays unset). The log line
/// shows the slots (`%hr`, `%hs`, `capture.req.hdr`, `capture.res.hdr`)
/// and the variables.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_converters_give_haproxys_log_lines() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{}frontend fe
    bind {{fe0}}
    declare capture request len 5
    declare capture request len 20
    declare capture response len 4
    http-request set-var(txn.a) req.hdr(x-c),capture-req(0)
    http-request set-var(txn.b) req.hdr(x-c),capture-req(2)
    http-request set-var(txn.c) str(second),capture-req(1)
    log-format \"%hr %hs [%[capture.req.hdr(0)]] [%[capture.req.hdr(1)]] [%[capture.res.hdr(0)]] a=%[var(txn.a)] b=%[var(txn.b)] c=%[var(txn.c)] r=%[var(txn.r)] n=%[var(txn.n)]\"
    default_backend be
backend be
    http-response set-var(txn.r) res.hdr(x-r),capture-res(0)
    http-response set-var(txn.n) res.hdr(x-r),capture-res(1)
    server s1 {{srv}}
",
        haproxy::HTTP_LOG_GLOBAL
    );
    let pair = Pair::start("sample-capconv", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nx-r: response-value\r\n\r\n");
    let [h, s] = pair
        .both(
            0,
            "GET / HTTP/1.1\r\nhost: h\r\nx-c: captured-value\r\nconnection: close\r\n\r\n",
        )
        .await;
    assert!(h.1.contains("a=captured-value"), "{}", h.1);
    assert_eq!(s.1, h.1, "sluice's log line, then haproxy's");
}

/// Every matcher of the `map_*` converters with its `_int` and `_ip`
/// outputs (and `_str`, the default's), found and not found, with and
/// without a default value, on the same files under both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_output_forms_give_haproxys_bytes() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("sample-maps");
    // (matcher, the patterns of a map's three lines, a key finding each,
    // a key found nowhere): each map file is written with the values of
    // one output type (haproxy refuses a file whose values are not).
    let keys: &[(&str, [&str; 3], [&str; 3], &str)] = &[
        ("str", ["k", "kip", "kw"], ["k", "kip", "kw"], "zz"),
        ("beg", ["/a", "/ip", "/w"], ["/a/b", "/ip", "/w/x"], "/zz"),
        ("end", [".int", ".ip", ".w"], ["x.int", "y.ip", "z.w"], "zz"),
        (
            "sub",
            ["int", "ipv", "wrd"],
            ["xintx", "aipvb", "wrdz"],
            "zz",
        ),
        (
            "reg",
            ["^i.t$", "^i[p]+$", "^w"],
            ["int", "ipp", "wx"],
            "zz",
        ),
        (
            "dom",
            ["int.test", "ip.test", "w.test"],
            ["a.int.test", "ip.test", "w.test"],
            "zz.test",
        ),
        (
            "dir",
            ["int", "ip", "w"],
            ["/x/int/y", "/ip", "/w/z"],
            "/zz",
        ),
        ("int", ["1", "2", "3"], ["1", "2", "3"], "9"),
        (
            "ip",
            ["10.0.0.0/8", "192.168.0.0/16", "127.0.0.1"],
            ["10.9.9.9", "192.168.1.1", "127.0.0.1"],
            "8.8.8.8",
        ),
    ];
    let values = [
        ("", ["word", "other", "third"], "dflt"),
        ("_int", ["42", "-7", "0"], "7"),
        ("_ip", ["10.1.2.3", "192.168.0.1", "::1"], "1.1.1.1"),
    ];
    let d = dir.path().display().to_string();
    let mut exprs = Vec::new();
    for (m, patterns, found, missing) in keys {
        let input = |k: &str| match *m {
            "int" => format!("int({k})"),
            "ip" => format!("ipv4({k})"),
            _ => format!("str({k})"),
        };
        for (out, vals, default) in &values {
            let file = format!("{m}{out}.map");
            let text: String = patterns
                .iter()
                .zip(vals)
                .map(|(p, v)| format!("{p} {v}\n"))
                .collect();
            dir.write(&file, &text);
            // map_<m> is map_<m>_str (map_str_str and the like are not
            // in the 2.6 binary: faulty_expressions checks them).
            let conv = format!("map_{m}{out}");
            for k in found.iter().chain([missing]) {
                exprs.push(format!("{},{conv}({d}/{file})", input(k)));
            }
            exprs.push(format!("{},{conv}({d}/{file},{default})", input(missing)));
        }
    }
    // The converters compared, by name (the docs gate finds them here).
    const CONVERTERS: &[&str] = &[
        "map_str",
        "map_str_int",
        "map_str_ip",
        "map_beg",
        "map_beg_int",
        "map_beg_ip",
        "map_end",
        "map_end_int",
        "map_end_ip",
        "map_sub",
        "map_sub_int",
        "map_sub_ip",
        "map_reg",
        "map_reg_int",
        "map_reg_ip",
        "map_dom",
        "map_dom_int",
        "map_dom_ip",
        "map_dir",
        "map_dir_int",
        "map_dir_ip",
        "map_int",
        "map_int_int",
        "map_int_ip",
        "map_ip",
        "map_ip_int",
        "map_ip_ip",
    ];
    let used: std::collections::BTreeSet<&str> = exprs
        .iter()
        .filter_map(|e| e.split(',').nth(1)?.split('(').next())
        .collect();
    assert_eq!(used, CONVERTERS.iter().copied().collect());
    let cfg = |bind: &str| {
        format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
{}",
            haproxy::return_rules(&exprs)
        )
    };
    let fronts = listens(2);
    let _hap = Haproxy::start(
        "sample-maps-hap",
        &cfg(&fronts[0].to_string()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&cfg(&fronts[1].to_string()));
    let mut differ = Vec::new();
    let mut found = 0;
    for (i, e) in exprs.iter().enumerate() {
        let path = format!("/{i}");
        let (h, s) = (
            get(fronts[0].addr(), &path).await,
            get(fronts[1].addr(), &path).await,
        );
        // Not vacuous: most keys give haproxy a value.
        found += usize::from(h.body.len() > 2);
        differ.extend(haproxy::answer_differs(e, &h, &s));
    }
    assert!(found > exprs.len() / 2, "{found} of {}", exprs.len());
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// The stick table fetches and converters (`sc*_`, `src_*`, `table_*`,
/// `in_table`) on one client tracked three ways (a connection rule's
/// `sc1` and a request rule's `sc0` in a table of the legacy `gpc0`,
/// `gpc1` and `gpt0`, a request rule's `sc2` in one of the `gpc`, `gpt`
/// arrays), every other data type stored, one request per expression
/// under both: the counters move alike (`inc` and `clr` fetches
/// included). What must differ is masked: HAProxy counts the bytes of
/// its internal form of the messages, sluice the bytes on the wire (as
/// in tables_haproxy), so the byte rates are compared as set or not,
/// after requests that set them, and the kilobyte counts on a frontend
/// whose traffic stays under a kilobyte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stick_table_samples_give_haproxys_bytes() {
    if !haproxy::available() {
        return;
    }
    const MAIN: &[&str] = &[
        "sc0_bytes_in_rate,bool",
        "sc0_bytes_out_rate,bool",
        "sc0_clr_gpc0",
        "sc0_clr_gpc1",
        "sc0_conn_cnt",
        "sc0_conn_cur",
        "sc0_conn_rate",
        "sc0_get_gpc0",
        "sc0_get_gpc1",
        "sc0_get_gpt0",
        "sc0_gpc0_rate",
        "sc0_gpc1_rate",
        "sc0_http_err_cnt",
        "sc0_http_err_rate",
        "sc0_http_fail_cnt",
        "sc0_http_fail_rate",
        "sc0_http_req_cnt",
        "sc0_http_req_rate",
        "sc0_inc_gpc0",
        "sc0_inc_gpc1",
        "sc0_sess_cnt",
        "sc0_sess_rate",
        "sc0_tracked",
        "sc0_trackers",
        "sc1_bytes_in_rate,bool",
        "sc1_bytes_out_rate,bool",
        "sc1_clr_gpc0",
        "sc1_clr_gpc1",
        "sc1_conn_cnt",
        "sc1_conn_cur",
        "sc1_conn_rate",
        "sc1_get_gpc0",
        "sc1_get_gpc1",
        "sc1_get_gpt0",
        "sc1_gpc0_rate",
        "sc1_gpc1_rate",
        "sc1_http_err_cnt",
        "sc1_http_err_rate",
        "sc1_http_fail_cnt",
        "sc1_http_fail_rate",
        "sc1_http_req_cnt",
        "sc1_http_req_rate",
        "sc1_inc_gpc0",
        "sc1_inc_gpc1",
        "sc1_sess_cnt",
        "sc1_sess_rate",
        "sc1_tracked",
        "sc1_trackers",
        "sc2_bytes_in_rate,bool",
        "sc2_bytes_out_rate,bool",
        "sc2_clr_gpc0",
        "sc2_clr_gpc1",
        "sc2_conn_cnt",
        "sc2_conn_cur",
        "sc2_conn_rate",
        "sc2_get_gpc0",
        "sc2_get_gpc1",
        "sc2_get_gpt0",
        "sc2_gpc0_rate",
        "sc2_gpc1_rate",
        "sc2_http_err_cnt",
        "sc2_http_err_rate",
        "sc2_http_fail_cnt",
        "sc2_http_fail_rate",
        "sc2_http_req_cnt",
        "sc2_http_req_rate",
        "sc2_inc_gpc0",
        "sc2_inc_gpc1",
        "sc2_sess_cnt",
        "sc2_sess_rate",
        "sc2_tracked",
        "sc2_trackers",
        "sc_bytes_in_rate(0),bool",
        "sc_bytes_out_rate(0),bool",
        "sc_clr_gpc(1,2)",
        "sc_clr_gpc0(0)",
        "sc_clr_gpc1(0)",
        "sc_conn_cnt(0)",
        "sc_conn_cur(0)",
        "sc_conn_rate(0)",
        "sc_get_gpc(1,2)",
        "sc_get_gpc0(0)",
        "sc_get_gpc1(0)",
        "sc_get_gpt(1,2)",
        "sc_get_gpt0(0)",
        "sc_gpc0_rate(0)",
        "sc_gpc1_rate(0)",
        "sc_gpc_rate(1,2)",
        "sc_http_err_cnt(0)",
        "sc_http_err_rate(0)",
        "sc_http_fail_cnt(0)",
        "sc_http_fail_rate(0)",
        "sc_http_req_cnt(0)",
        "sc_http_req_rate(0)",
        "sc_inc_gpc(1,2)",
        "sc_inc_gpc0(0)",
        "sc_inc_gpc1(0)",
        "sc_sess_cnt(0)",
        "sc_sess_rate(0)",
        "sc_tracked(0)",
        "sc_trackers(0)",
        "src_bytes_in_rate,bool",
        "src_bytes_out_rate,bool",
        "src_clr_gpc(1,t2)",
        "src_clr_gpc0",
        "src_clr_gpc1",
        "src_conn_cnt",
        "src_conn_cur",
        "src_conn_rate",
        "src_get_gpc(1,t2)",
        "src_get_gpc0",
        "src_get_gpc1",
        "src_get_gpt(1,t2)",
        "src_get_gpt0",
        "src_gpc0_rate",
        "src_gpc1_rate",
        "src_gpc_rate(1,t2)",
        "src_http_err_cnt",
        "src_http_err_rate",
        "src_http_fail_cnt",
        "src_http_fail_rate",
        "src_http_req_cnt",
        "src_http_req_rate",
        "src_inc_gpc(1,t2)",
        "src_inc_gpc0",
        "src_inc_gpc1",
        "src_sess_cnt",
        "src_sess_rate",
        "src_updt_conn_cnt",
        "table_avl(fe)",
        "table_cnt(fe)",
        "src,in_table(fe)",
        "src,table_bytes_in_rate(fe),bool",
        "src,table_bytes_out_rate(fe),bool",
        "src,table_conn_cnt(fe)",
        "src,table_conn_cur(fe)",
        "src,table_conn_rate(fe)",
        "src,table_gpc(1,t2)",
        "src,table_gpc0(fe)",
        "src,table_gpc0_rate(fe)",
        "src,table_gpc1(fe)",
        "src,table_gpc1_rate(fe)",
        "src,table_gpc_rate(1,t2)",
        "src,table_gpt(1,t2)",
        "src,table_gpt0(fe)",
        "src,table_http_err_cnt(fe)",
        "src,table_http_err_rate(fe)",
        "src,table_http_fail_cnt(fe)",
        "src,table_http_fail_rate(fe)",
        "src,table_http_req_cnt(fe)",
        "src,table_http_req_rate(fe)",
        "src,table_server_id(fe)",
        "src,table_sess_cnt(fe)",
        "src,table_sess_rate(fe)",
        "src,table_trackers(fe)",
    ];
    const KBYTES: &[&str] = &[
        "sc0_kbytes_in",
        "sc0_kbytes_out",
        "sc1_kbytes_in",
        "sc1_kbytes_out",
        "sc2_kbytes_in",
        "sc2_kbytes_out",
        "sc_kbytes_in(0)",
        "sc_kbytes_out(0)",
        "src_kbytes_in",
        "src_kbytes_out",
        "src,table_kbytes_in(fk)",
        "src,table_kbytes_out(fk)",
    ];
    let common = "conn_cnt,conn_cur,conn_rate(1m),sess_cnt,sess_rate(1m),http_req_cnt,http_req_rate(1m),http_err_cnt,http_err_rate(1m),http_fail_cnt,http_fail_rate(1m),bytes_in_cnt,bytes_in_rate(1m),bytes_out_cnt,bytes_out_rate(1m),server_id";
    let cfg = |binds: [&str; 2]| {
        format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {}
    stick-table type ip size 100 expire 1m store gpc0,gpc1,gpc0_rate(1m),gpc1_rate(1m),gpt0,{common}
    tcp-request connection track-sc1 src
    http-request track-sc0 src
    http-request track-sc2 src table t2
    http-request sc-set-gpt0(0) 5
    http-request sc-set-gpt(1,2) 6
    http-request sc-inc-gpc0(1) if {{ path_beg /warm }}
    http-request sc-inc-gpc(1,2) if {{ path_beg /warm }}
    http-request return status 404 if {{ path_beg /warm }}
{}backend t2
    stick-table type ip size 100 expire 1m store gpc(2),gpc_rate(2,1m),gpt(2),{common}
frontend fk
    bind {}
    stick-table type ip size 100 expire 1m store {common}
    tcp-request connection track-sc1 src
    http-request track-sc0 src
    http-request track-sc2 src
{}",
            binds[0],
            haproxy::return_rules(MAIN),
            binds[1],
            haproxy::return_rules(KBYTES),
        )
    };
    let fronts = listens(4);
    let names: Vec<String> = fronts.iter().map(ToString::to_string).collect();
    let _hap = Haproxy::start(
        "sample-stick-hap",
        &cfg([&names[0], &names[1]]),
        &[&fronts[0], &fronts[1]],
    );
    let _sl = Sluice::start(&cfg([&names[2], &names[3]]));
    // Requests that set the counters going (the 404s are errors).
    for _ in 0..3 {
        for f in [&fronts[0], &fronts[2]] {
            assert_eq!(get(f.addr(), "/warm").await.status, 404);
        }
    }
    let mut differ = Vec::new();
    let mut nonzero = 0;
    let cases = MAIN
        .iter()
        .enumerate()
        .map(|(i, e)| (0, i, e))
        .chain(KBYTES.iter().enumerate().map(|(i, e)| (1, i, e)));
    for (front, i, e) in cases {
        let path = format!("/{i}");
        // A connection's end (its `conn_cur`) may still be under way in
        // either proxy: a difference is asked again of both (bounded),
        // which moves both proxies' counters alike.
        let mut last = None;
        for _ in 0..20 {
            let (h, s) = (
                get(fronts[front].addr(), &path).await,
                get(fronts[front + 2].addr(), &path).await,
            );
            nonzero += usize::from(h.body != b"[0]" && h.body != b"[]");
            last = haproxy::answer_differs(e, &h, &s);
            if last.is_none() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        differ.extend(last);
    }
    // Not vacuous: most counters have moved under haproxy.
    assert!(nonzero > MAIN.len() / 2, "{nonzero} of {}", MAIN.len());
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
