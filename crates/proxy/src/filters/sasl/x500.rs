//! A client certificate's subject written as Java's `X500Principal.getName()` writes it
//! (RFC 2253), which is the principal Kafka's default principal builder gives an mTLS
//! client. Only the writing: when that subject counts (no SASL) is the parent's.

#[cfg(test)]
mod tests;

/// A certificate's subject as Kafka's default principal builder writes it
/// (`X500Principal.getName()`, see [`name_rfc2253`]). None when the certificate cannot be
/// read, or its subject written exactly as Java would.
pub fn certificate_subject(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    name_rfc2253(cert.subject())
}

/// A distinguished name as Java's `X500Principal.getName()` writes it (RFC 2253, which
/// Kafka's default principal builder uses): the RDNs in the reverse order of the DER
/// sequence, joined by `,`; the attributes of a multi-valued RDN in their DER order, joined
/// by `+`; the keywords CN, C, L, ST, O, OU, STREET, DC and UID, any other attribute by its
/// OID; a value that is a string of a known attribute written out with Java's escapes
/// ([`escape_rfc2253`]), any other as `#` and the lowercase hex of its DER encoding. None
/// for an empty name, and for a string Java 17 and later Javas write otherwise (see
/// [`ava_rfc2253`]), or write with replacement characters: rather unknown than another
/// name.
fn name_rfc2253(name: &x509_parser::x509::X509Name<'_>) -> Option<String> {
    let mut rdns = Vec::new();
    for rdn in name.iter() {
        let mut avas = Vec::new();
        for ava in rdn.iter() {
            avas.push(ava_rfc2253(ava)?);
        }
        rdns.push(avas.join("+"));
    }
    rdns.reverse();
    let name = rdns.join(",");
    (!name.is_empty()).then_some(name)
}

fn ava_rfc2253(ava: &x509_parser::x509::AttributeTypeAndValue<'_>) -> Option<String> {
    let oid = oid_text(ava.attr_type().as_bytes())?;
    let keyword = match oid.as_str() {
        "2.5.4.3" => Some("CN"),
        "2.5.4.6" => Some("C"),
        "2.5.4.7" => Some("L"),
        "2.5.4.8" => Some("ST"),
        "2.5.4.10" => Some("O"),
        "2.5.4.11" => Some("OU"),
        "2.5.4.9" => Some("STREET"),
        "0.9.2342.19200300.100.1.25" => Some("DC"),
        "0.9.2342.19200300.100.1.1" => Some("UID"),
        _ => None,
    };
    let value = ava.attr_value();
    let header = &value.header;
    let tag = header.tag().0;
    if tag >= 31 {
        return None; // a multi-byte tag, which Java's DerValue does not read
    }
    let tag_byte =
        ((header.class() as u8) << 6) | (u8::from(header.is_constructed()) << 5) | tag as u8;
    let data = value.data;
    let text = match (keyword, tag_byte) {
        (None, _) => None,
        // Java 17 reads the bytes of every string type as UTF-8; later versions read each
        // in its own charset (US-ASCII, ISO-8859-1 for TeletexString, UTF-16 for
        // BMPString). They agree on UTF8String, and on ASCII in PrintableString,
        // TeletexString, IA5String and GeneralString; any other string is written
        // otherwise by one Java or another (a BMPString always): unknown.
        (Some(_), 0x13 | 0x14 | 0x16 | 0x1b) => Some(if data.is_ascii() {
            data.iter().map(|&b| char::from(b)).collect::<String>()
        } else {
            return None;
        }),
        (Some(_), 0x0c) => Some(std::str::from_utf8(data).ok()?.to_owned()),
        (Some(_), 0x1e) => return None,
        (Some(_), _) => None,
    };
    let key = keyword.unwrap_or(&oid);
    Some(match text {
        Some(text) => format!("{key}={}", escape_rfc2253(&text)),
        None => {
            // The whole DER value, as Java re-encodes it (definite, shortest length).
            let mut der = vec![tag_byte];
            let len = data.len();
            if len < 0x80 {
                der.push(len as u8);
            } else {
                let bytes = len.to_be_bytes();
                let skip = bytes.iter().take_while(|&&b| b == 0).count();
                der.push(0x80 | (bytes.len() - skip) as u8);
                der.extend(&bytes[skip..]);
            }
            der.extend(data);
            let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
            format!("{key}=#{hex}")
        }
    })
}

/// An OBJECT IDENTIFIER's content in dotted decimal, as Java writes it: the first
/// sub-identifier holds the first two arcs (40 x + y, x at most 2, so that `2.999` is one
/// sub-identifier, 1079). None for an encoding Java refuses (a sub-identifier padded with
/// 0x80, or cut), or an arc past 64 bits.
fn oid_text(content: &[u8]) -> Option<String> {
    let mut arcs: Vec<u64> = Vec::new();
    let mut value = 0u64;
    let mut start = true;
    for &b in content {
        if start && b == 0x80 {
            return None;
        }
        value = value.checked_mul(128)? | u64::from(b & 0x7f);
        start = b & 0x80 == 0;
        if start {
            if arcs.is_empty() {
                let first = (value / 40).min(2);
                arcs.extend([first, value - 40 * first]);
            } else {
                arcs.push(value);
            }
            value = 0;
        }
    }
    if !start || arcs.is_empty() {
        return None;
    }
    Some(
        arcs.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// A value escaped as Java's `AVA.toRFC2253String` escapes it: a backslash before each of
/// `, = + < > # ; " \` anywhere, NUL as `\00`, and a backslash before every space or
/// carriage return that leads or trails the result.
fn escape_rfc2253(value: &str) -> String {
    let mut chars = Vec::with_capacity(value.len());
    for c in value.chars() {
        match c {
            ',' | '=' | '+' | '<' | '>' | '#' | ';' | '"' | '\\' => chars.extend(['\\', c]),
            '\0' => chars.extend(['\\', '0', '0']),
            c => chars.push(c),
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = chars.iter().position(|c| !blank(c)).unwrap_or(chars.len());
    let trail = chars.iter().rposition(|c| !blank(c));
    let mut out = String::with_capacity(chars.len() + 2);
    for (i, c) in chars.into_iter().enumerate() {
        if i < lead || trail.is_none_or(|t| i > t) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
