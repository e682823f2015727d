//! JSON Web Tokens against the real HAProxy 2.6: `jwt_verify`,
//! `jwt_header_query` and `jwt_payload_query` on the same tokens (HMAC,
//! RSA and ECDSA ones, tampered and malformed ones) under haproxy and
//! sluice, their answers compared byte for byte; the faulty arguments'
//! messages compared with `haproxy -c`'s. Keys are made by `openssl` for
//! the test and the tokens signed with `ring`; nothing is masked.

mod support;

use base64::Engine as _;
use support::haproxy::{self, Haproxy};
use support::*;

fn b64u(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// The DER inside a PEM file.
fn der_of(pem: &str) -> Vec<u8> {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .expect("PEM")
}

fn openssl(args: &[&str]) {
    let st = std::process::Command::new("openssl")
        .args(args)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl");
    assert!(st.success(), "openssl {args:?}");
}

/// A key pair for the test: the private key (PKCS#8 DER) and the path of
/// its public key (PEM).
struct Keys {
    rsa: Vec<u8>,
    ec256: Vec<u8>,
    ec384: Vec<u8>,
}

fn make_keys(dir: &TempDir) -> Keys {
    let make = |name: &str, how: &[&str]| {
        let key = dir.join(&format!("{name}.key"));
        let key = key.to_str().unwrap();
        let mut args = vec!["genpkey"];
        args.extend_from_slice(how);
        args.extend_from_slice(&["-out", key]);
        openssl(&args);
        let public = dir.join(&format!("{name}.pub"));
        openssl(&[
            "pkey",
            "-in",
            key,
            "-pubout",
            "-out",
            public.to_str().unwrap(),
        ]);
        der_of(&std::fs::read_to_string(key).unwrap())
    };
    Keys {
        rsa: make(
            "rsa",
            &["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
        ),
        ec256: make(
            "ec256",
            &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
        ),
        ec384: make(
            "ec384",
            &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"],
        ),
    }
}

/// `<header>.<payload>.<signature>` for `alg`, signed with `keys`.
fn token(alg: &str, payload: &str, keys: &Keys) -> String {
    use ring::signature as rs;
    let rng = ring::rand::SystemRandom::new();
    let head = format!("{{\"alg\":\"{alg}\",\"typ\":\"JWT\"}}");
    let signed = format!("{}.{}", b64u(head.as_bytes()), b64u(payload.as_bytes()));
    let msg = signed.as_bytes();
    let hmac = |a| {
        let k = ring::hmac::Key::new(a, b"secret");
        ring::hmac::sign(&k, msg).as_ref().to_vec()
    };
    let rsa = |a| {
        let k = rs::RsaKeyPair::from_pkcs8(&keys.rsa).expect("RSA key");
        let mut sig = vec![0; k.public().modulus_len()];
        k.sign(a, &rng, msg, &mut sig).expect("sign");
        sig
    };
    let ec = |a, der: &[u8]| {
        let k = rs::EcdsaKeyPair::from_pkcs8(a, der, &rng).expect("EC key");
        k.sign(&rng, msg).expect("sign").as_ref().to_vec()
    };
    let sig = match alg {
        "HS256" => hmac(ring::hmac::HMAC_SHA256),
        "HS384" => hmac(ring::hmac::HMAC_SHA384),
        "HS512" => hmac(ring::hmac::HMAC_SHA512),
        "RS256" => rsa(&rs::RSA_PKCS1_SHA256),
        "RS384" => rsa(&rs::RSA_PKCS1_SHA384),
        "RS512" => rsa(&rs::RSA_PKCS1_SHA512),
        "ES256" => ec(&rs::ECDSA_P256_SHA256_FIXED_SIGNING, &keys.ec256),
        "ES384" => ec(&rs::ECDSA_P384_SHA384_FIXED_SIGNING, &keys.ec384),
        _ => Vec::new(),
    };
    format!("{signed}.{}", b64u(&sig))
}

/// The tokens: one good one per algorithm, tampered ones, and the
/// malformed shapes whose codes HAProxy tells apart.
fn tokens(keys: &Keys) -> Vec<String> {
    let payload = r#"{"sub":"alice","exp":1700000000,"n":1.5,"ok":true}"#;
    let mut out: Vec<String> = [
        "HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "ES384",
    ]
    .iter()
    .map(|alg| token(alg, payload, keys))
    .collect();
    // A signature one bit off, a payload changed after signing.
    let good = token("RS256", payload, keys);
    let mut bits: Vec<char> = good.chars().collect();
    let last = bits.len() - 2;
    bits[last] = if bits[last] == 'A' { 'B' } else { 'A' };
    out.push(bits.into_iter().collect());
    let mut parts: Vec<&str> = good.split('.').collect();
    let other = b64u(br#"{"sub":"mallory"}"#);
    parts[1] = &other;
    out.push(parts.join("."));
    out.push(format!("{good}."));
    for shape in [
        "a",
        "a.b",
        "a.b.c.d",
        "e30.e30.AAAA",
        "@@.e30.AAAA",
        "e30.@@.AAAA",
        "e30.e30.@@",
        "e30.e30.",
        "e30.e30.AA==",
        "e30.e30.A+/A",
        "e30.e30.AAAAAA",
        "e30..",
        "..",
    ] {
        out.push(shape.to_string());
    }
    out
}

/// The expressions on each token (`{dir}` is the keys' directory).
const EXPRS: &[&str] = &[
    "jwt_verify(HS256,secret)",
    "jwt_verify(HS384,secret)",
    "jwt_verify(HS512,secret)",
    "jwt_verify(HS256,wrong)",
    "jwt_verify(RS256,{dir}/rsa.pub)",
    "jwt_verify(RS384,{dir}/rsa.pub)",
    "jwt_verify(RS512,{dir}/rsa.pub)",
    "jwt_verify(ES256,{dir}/ec256.pub)",
    "jwt_verify(ES384,{dir}/ec384.pub)",
    "jwt_verify(ES256,{dir}/ec384.pub)",
    "jwt_verify(RS256,{dir}/ec256.pub)",
    "jwt_verify(RS256,{dir}/none.pub)",
    "jwt_verify(none,x)",
    "jwt_verify(txn.alg,{dir}/rsa.pub)",
    "jwt_verify(HS256,txn.secret)",
    "jwt_verify(txn.unset,secret)",
    "jwt_header_query('$.alg')",
    "jwt_header_query('$.typ')",
    "jwt_header_query",
    "jwt_header_query,length",
    "jwt_payload_query('$.sub')",
    "jwt_payload_query('$.n','int')",
    "jwt_payload_query('$.n')",
    "jwt_payload_query('$.exp','int')",
    "jwt_payload_query('$.ok')",
    "jwt_payload_query('$.none')",
];

fn config(bind: &str, dir: &str) -> String {
    let mut cfg = format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    http-request set-var(txn.alg) req.hdr(x-t),jwt_header_query('$.alg')
    http-request set-var(txn.secret) str(secret)
"
    );
    cfg.push_str(&haproxy::return_rules(EXPRS.iter().map(|e| {
        format!(
            "req.hdr(x-t),{}",
            e.replace("{dir}", dir).replace('$', "\\$")
        )
    })));
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_give_haproxys_answers() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("jwt");
    let keys = make_keys(&dir);
    let path = dir.path().to_str().unwrap().to_string();
    let fronts = listens(2);
    let _hap = Haproxy::start(
        "jwt-hap",
        &config(&fronts[0].to_string(), &path),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&config(&fronts[1].to_string(), &path));
    let mut differ = Vec::new();
    let mut verified = 0;
    for t in tokens(&keys) {
        for (i, e) in EXPRS.iter().enumerate() {
            let req = format!("GET /{i} HTTP/1.1\r\nhost: h\r\nx-t: {t}\r\n\r\n");
            let got = haproxy::answers_to(&fronts, req.as_bytes()).await;
            if e.starts_with("jwt_verify") && got[0].body == b"[1]" {
                verified += 1;
            }
            let label = format!("{e} on {t}");
            differ.extend(haproxy::answer_differs(&label, &got[0], &got[1]));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    // Each algorithm's good token was verified by its key, at least.
    assert!(verified >= 8, "only {verified} verifications succeeded");
}

#[test]
fn faulty_arguments_get_haproxys_messages() {
    if !haproxy::available() {
        return;
    }
    let cases = [
        "jwt_verify(PS256,/k.pub)",
        "jwt_verify(XX256,/k.pub)",
        "jwt_verify(HS256)",
        "jwt_verify",
        "jwt_header_query('$.alg',str)",
        "jwt_payload_query('')",
    ]
    .into_iter()
    .map(|e| {
        let cfg = format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind 127.0.0.1:1
    http-request return status 200 content-type text/plain lf-string \"%[req.hdr(x-t),{}]\"
",
            e.replace('$', "\\$")
        );
        (e.to_string(), cfg)
    });
    haproxy::assert_check_agrees("jwt-check", cases, haproxy::first_alert);
}
