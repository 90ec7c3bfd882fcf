//! Tests of the RFC 2253 writing: DER names of every shape, and certificates made by rcgen,
//! against what Java's `X500Principal.getName()` writes (checked against Java itself where
//! it is installed).

use super::*;

/// DER: a tag, a length, the content.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend(&bytes[skip..]);
    }
    out.extend(content);
    out
}

fn oid(arcs: &[u64]) -> Vec<u8> {
    let mut content = Vec::new();
    let mut put = |mut arc: u64| {
        let mut groups = vec![(arc & 0x7f) as u8];
        arc >>= 7;
        while arc > 0 {
            groups.push((arc & 0x7f) as u8 | 0x80);
            arc >>= 7;
        }
        groups.reverse();
        content.extend(groups);
    };
    put(arcs[0] * 40 + arcs[1]);
    for &arc in &arcs[2..] {
        put(arc);
    }
    tlv(0x06, &content)
}

const CN: &[u64] = &[2, 5, 4, 3];
const OU: &[u64] = &[2, 5, 4, 11];
const O: &[u64] = &[2, 5, 4, 10];
const C: &[u64] = &[2, 5, 4, 6];
const UID: &[u64] = &[0, 9, 2342, 19200300, 100, 1, 1];
const DC: &[u64] = &[0, 9, 2342, 19200300, 100, 1, 25];
const EMAIL: &[u64] = &[1, 2, 840, 113549, 1, 9, 1];
const SURNAME: &[u64] = &[2, 5, 4, 4];
const UTF8: u8 = 0x0c;
const PRINTABLE: u8 = 0x13;
const T61: u8 = 0x14;
const IA5: u8 = 0x16;
const BMP: u8 = 0x1e;

/// An attribute: its type and value (a tag and the value's bytes).
fn ava(arcs: &[u64], tag: u8, value: &[u8]) -> Vec<u8> {
    let mut content = oid(arcs);
    content.extend(tlv(tag, value));
    tlv(0x30, &content)
}

/// A name of RDNs, each a set of attributes (in this order, DER's own or not).
fn name(rdns: &[Vec<Vec<u8>>]) -> Vec<u8> {
    let content: Vec<u8> = rdns
        .iter()
        .flat_map(|rdn| tlv(0x31, &rdn.concat()))
        .collect();
    tlv(0x30, &content)
}

fn bmp(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

fn written(der: &[u8]) -> Option<String> {
    use x509_parser::prelude::FromDer;
    let (rest, name) = x509_parser::x509::X509Name::from_der(der).unwrap();
    assert!(rest.is_empty());
    name_rfc2253(&name)
}

/// Names of every shape the guard writes, with what Java's `X500Principal.getName()`
/// writes for each (checked against Java itself by
/// `names_as_java_writes_them`, where Java is installed).
fn names() -> Vec<(Vec<u8>, &'static str)> {
    let long = "x".repeat(200);
    let long: &'static str = Box::leak(long.into_boxed_str());
    vec![
        (
            name(&[
                vec![ava(C, PRINTABLE, b"US")],
                vec![ava(O, UTF8, b"Example, Inc.")],
                vec![ava(CN, UTF8, b"alice")],
            ]),
            r"CN=alice,O=Example\, Inc.,C=US",
        ),
        // Multi-valued RDNs: their attributes in DER order, joined by `+`.
        (
            name(&[
                vec![ava(O, UTF8, b"kafka-elect-leaders")],
                vec![ava(OU, UTF8, b"ops"), ava(OU, UTF8, b"e2e")],
                vec![ava(CN, UTF8, b"carol"), ava(UID, UTF8, b"c1")],
            ]),
            "CN=carol+UID=c1,OU=ops+OU=e2e,O=kafka-elect-leaders",
        ),
        // Every character Java escapes, anywhere in the value.
        (
            name(&[vec![ava(CN, UTF8, br#"a,b=c+d<e>f#g;h"i\j"#)]]),
            r#"CN=a\,b\=c\+d\<e\>f\#g\;h\"i\\j"#,
        ),
        (name(&[vec![ava(CN, UTF8, b"#lead")]]), r"CN=\#lead"),
        // Leading and trailing spaces and carriage returns, each escaped.
        (name(&[vec![ava(CN, UTF8, b"  two ")]]), r"CN=\ \ two\ "),
        (
            name(&[vec![ava(CN, UTF8, b" \r x\r")]]),
            "CN=\\ \\\r\\ x\\\r",
        ),
        (name(&[vec![ava(CN, UTF8, b"   ")]]), r"CN=\ \ \ "),
        (name(&[vec![ava(CN, UTF8, b"in side")]]), "CN=in side"),
        (name(&[vec![ava(CN, UTF8, b"nul\0x")]]), r"CN=nul\00x"),
        (name(&[vec![ava(CN, UTF8, b"")]]), "CN="),
        (
            name(&[vec![ava(CN, UTF8, b"tab\tnl\n@*_")]]),
            "CN=tab\tnl\n@*_",
        ),
        // Other string types, and characters outside ASCII.
        (
            name(&[
                vec![ava(DC, IA5, b"com")],
                vec![ava(DC, IA5, b"example")],
                vec![ava(CN, T61, b"cafe")],
            ]),
            "CN=cafe,DC=example,DC=com",
        ),
        (
            name(&[vec![ava(CN, UTF8, "ünï ✓ 😀".as_bytes())]]),
            "CN=ünï ✓ 😀",
        ),
        (
            name(&[vec![
                ava(&[2, 5, 4, 7], UTF8, b"L"),
                ava(&[2, 5, 4, 8], UTF8, b"ST"),
            ]]),
            "L=L+ST=ST",
        ),
        (
            name(&[vec![ava(&[2, 5, 4, 9], UTF8, b"1 Main St")]]),
            "STREET=1 Main St",
        ),
        // Attributes without an RFC 2253 keyword: the OID, the value's DER in hex.
        (
            name(&[vec![ava(EMAIL, IA5, b"a@b.c")], vec![ava(CN, UTF8, b"x")]]),
            "CN=x,1.2.840.113549.1.9.1=#16056140622e63",
        ),
        (
            name(&[vec![ava(SURNAME, UTF8, b"Doe")]]),
            "2.5.4.4=#0c03446f65",
        ),
        (
            name(&[vec![ava(
                &[1, 3, 6, 1, 4, 1, 99999, 7],
                UTF8,
                long.as_bytes(),
            )]]),
            "1.3.6.1.4.1.99999.7=#0c81c8LONG",
        ),
        (
            name(&[vec![ava(&[2, 999, 3], PRINTABLE, b"z")]]),
            "2.999.3=#13017a",
        ),
        // A known attribute whose value is not one of Java's strings: hex too.
        (name(&[vec![ava(CN, 0x02, b"\x05")]]), "CN=#020105"),
        (name(&[vec![ava(CN, 0x1c, b"\0\0\0a")]]), "CN=#1c0400000061"),
    ]
    .into_iter()
    .map(|(der, want)| {
        let want = want.replace("LONG", &"78".repeat(200));
        (der, Box::leak(want.into_boxed_str()) as &'static str)
    })
    .collect()
}

#[test]
fn subjects_in_rfc_2253_as_java_writes_them() {
    for (der, want) in names() {
        assert_eq!(written(&der).as_deref(), Some(want), "{der:02x?}");
    }
    // Bytes Java would write as replacement characters: unknown, not another name.
    for (tag, value) in [
        (PRINTABLE, &b"caf\xe9"[..]),
        (T61, b"caf\xe9"),
        (IA5, b"\x80"),
        (UTF8, b"\xff"),
        (BMP, &bmp("alice")),
        (BMP, b"\x00a\x00"),
    ] {
        assert_eq!(written(&name(&[vec![ava(CN, tag, value)]])), None);
    }
    assert_eq!(written(&name(&[])), None, "an empty name");
    assert_eq!(certificate_subject(b"not a certificate"), None);
}
/// A certificate made by rcgen with this subject, in this order.
fn certificate(dn: Vec<(rcgen::DnType, rcgen::DnValue)>) -> Vec<u8> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    for (ty, value) in dn {
        params.distinguished_name.push(ty, value);
    }
    let key = rcgen::KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().der().to_vec()
}

/// Certificates with several attributes, string types and characters to escape, and
/// the subject Java writes for each.
fn certificates() -> Vec<(Vec<u8>, &'static str)> {
    use rcgen::{DnType, DnValue};
    let custom = |arcs: &[u64]| DnType::CustomDnType(arcs.to_vec());
    vec![
        (
            certificate(vec![
                (
                    DnType::CountryName,
                    DnValue::PrintableString("US".try_into().unwrap()),
                ),
                (DnType::StateOrProvinceName, "Some State".into()),
                (DnType::LocalityName, "Town".into()),
                (DnType::OrganizationName, "Example, Inc.".into()),
                (DnType::OrganizationalUnitName, "ops+dev".into()),
                (DnType::CommonName, r#"alice "the" <admin>; #1 "#.into()),
            ]),
            r#"CN=alice \"the\" \<admin\>\; \#1\ ,OU=ops\+dev,O=Example\, Inc.,L=Town,ST=Some State,C=US"#,
        ),
        (
            certificate(vec![
                (custom(DC), DnValue::Ia5String("org".try_into().unwrap())),
                (
                    DnType::OrganizationName,
                    DnValue::TeletexString("Acme".try_into().unwrap()),
                ),
                (
                    DnType::OrganizationalUnitName,
                    DnValue::Ia5String("a=b".try_into().unwrap()),
                ),
                (custom(UID), "u-42".into()),
                (
                    custom(EMAIL),
                    DnValue::Ia5String("zoe@example.org".try_into().unwrap()),
                ),
                (DnType::CommonName, "zoë".into()),
            ]),
            "CN=zoë,1.2.840.113549.1.9.1=#160f7a6f65406578616d706c652e6f7267,UID=u-42,\
             OU=a\\=b,O=Acme,DC=org",
        ),
        (
            certificate(vec![
                (
                    DnType::OrganizationalUnitName,
                    DnValue::UniversalString("ü".try_into().unwrap()),
                ),
                (DnType::CommonName, "#carol".into()),
            ]),
            r"CN=\#carol,OU=#1c04000000fc",
        ),
    ]
}

#[test]
fn certificate_subjects_as_kafka_names_them() {
    for (der, want) in certificates() {
        assert_eq!(certificate_subject(&der).as_deref(), Some(want));
    }
    // A BMPString: Java 17 and later Javas write it otherwise.
    let bmp = certificate(vec![(
        rcgen::DnType::CommonName,
        rcgen::DnValue::BmpString("zoe".try_into().unwrap()),
    )]);
    assert_eq!(certificate_subject(&bmp), None);
}

/// The strongest proof: Java's own `X500Principal.getName()` (what Kafka's default
/// principal builder calls, `ssl.principal.mapping.rules=DEFAULT`) on every name and
/// certificate subject above writes what the guard writes. Skipped, with one line,
/// where no `java` (17 or later) is installed.
#[test]
fn names_as_java_writes_them() {
    let java = std::process::Command::new("java").arg("-version").output();
    if !java.is_ok_and(|o| o.status.success()) {
        eprintln!("names_as_java_writes_them: skipped: no `java` on PATH");
        return;
    }
    let mut cases: Vec<(Vec<u8>, String)> = names()
        .into_iter()
        .map(|(der, want)| (der, want.to_owned()))
        .collect();
    for (der, want) in certificates() {
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        cases.push((cert.subject().as_raw().to_vec(), want.to_owned()));
    }
    let dir = std::env::temp_dir().join(format!("guard-x500-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("Names.java");
    std::fs::write(
        &source,
        "import java.nio.charset.StandardCharsets;\n\
         import java.util.HexFormat;\n\
         import javax.security.auth.x500.X500Principal;\n\
         public class Names {\n\
         \x20   public static void main(String[] args) {\n\
         \x20       HexFormat hex = HexFormat.of();\n\
         \x20       for (String a : args) {\n\
         \x20           String name = new X500Principal(hex.parseHex(a)).getName();\n\
         \x20           System.out.println(hex.formatHex(name.getBytes(StandardCharsets.UTF_8)));\n\
         \x20       }\n\
         \x20   }\n\
         }\n",
    )
    .unwrap();
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let out = std::process::Command::new("java")
        .arg(&source)
        .args(cases.iter().map(|(der, _)| hex(der)))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "java: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), cases.len());
    for ((der, want), line) in cases.iter().zip(lines) {
        let bytes: Vec<u8> = (0..line.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&line[i..i + 2], 16).unwrap())
            .collect();
        let java = String::from_utf8(bytes).unwrap();
        assert_eq!(&java, want, "Java writes {der:02x?} otherwise");
        assert_eq!(written(der).as_deref(), Some(java.as_str()));
    }
}
