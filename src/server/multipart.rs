//! `multipart/form-data` bodies (RFC 7578 over RFC 2046 framing), parsed from the whole
//! body already read under `max_body_bytes`, and the JSON object an `UploadFile`
//! parameter receives.
//!
//! Framing: the boundary comes from the `Content-Type` parameter; the body is an
//! optional preamble, then `--boundary` CRLF, part headers, an empty line, the part's
//! bytes, CRLF `--boundary` ... and finally `--boundary--` (an epilogue after it is
//! ignored). Each part needs `Content-Disposition: form-data; name="..."` and may carry
//! `filename="..."` (or RFC 5987 `filename*=UTF-8''...`) and a `Content-Type`. Quoted
//! values may escape `"` and `\` with a backslash; any other backslash is kept, so a
//! Windows path survives. Anything else is [`Malformed`] (the caller answers 422).
//!
//! The upload object: `{"filename", "content_type", "size", "content"}`, where `content`
//! is the file's text when the bytes are valid UTF-8, else their base64 with an extra
//! `"encoding": "base64"`.

use super::params::percent_decode;
use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Value as Json, json};

/// Parts per body, beyond which the body is refused.
pub const MAX_PARTS: usize = 100;
/// Bytes of one part's header block.
pub const MAX_PART_HEADER_BYTES: usize = 8 * 1024;
/// RFC 2046: a boundary is 1 to 70 characters.
const MAX_BOUNDARY_LEN: usize = 70;
/// `content_type` of a file part that declares none.
pub const DEFAULT_FILE_TYPE: &str = "application/octet-stream";

/// Why a body is not acceptable multipart (a 422 `VALIDATION_ERROR` message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed(pub String);

fn malformed<T>(message: impl Into<String>) -> Result<T, Malformed> {
    Err(Malformed(message.into()))
}

/// One part of a form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part<'a> {
    pub name: String,
    /// Present for file parts (possibly empty: a browser's empty file input).
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: &'a [u8],
}

/// The `boundary` parameter of a `multipart/form-data` Content-Type header value.
pub fn boundary(content_type: &str) -> Result<String, Malformed> {
    let (_, params) = header_params(content_type)?;
    let Some((_, b)) = params.into_iter().find(|(k, _)| k == "boundary") else {
        return malformed("multipart/form-data needs a boundary parameter in Content-Type");
    };
    let valid = !b.is_empty()
        && b.len() <= MAX_BOUNDARY_LEN
        && b.bytes().all(|c| c.is_ascii_graphic() || c == b' ')
        && !b.ends_with(' ');
    if !valid {
        return malformed("the multipart boundary must be 1 to 70 visible ASCII characters");
    }
    Ok(b)
}

/// Split `body` into its parts.
pub fn parse<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>, Malformed> {
    let delimiter = format!("--{boundary}");
    let delimiter = delimiter.as_bytes();
    let mut next_delimiter = b"\r\n".to_vec();
    next_delimiter.extend_from_slice(delimiter);

    let mut pos = if body.starts_with(delimiter) {
        delimiter.len()
    } else {
        match find(body, &next_delimiter) {
            Some(at) => at + next_delimiter.len(),
            None => return malformed("the body does not contain the multipart boundary"),
        }
    };
    let mut parts = Vec::new();
    loop {
        // Just after a delimiter: `--` closes the body, else padding and CRLF.
        let rest = &body[pos..];
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        let padding = rest
            .iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
        if !rest[padding..].starts_with(b"\r\n") {
            return malformed(if rest.is_empty() {
                "the body ends before the closing multipart boundary"
            } else {
                "a multipart boundary line must end with CRLF"
            });
        }
        if parts.len() == MAX_PARTS {
            return malformed(format!("more than {MAX_PARTS} parts in the form"));
        }
        let start = pos + padding + 2;
        let rest = &body[start..];
        let (head, data_start) = if rest.starts_with(b"\r\n") {
            (&rest[..0], start + 2)
        } else {
            let window = &rest[..rest.len().min(MAX_PART_HEADER_BYTES + 4)];
            match find(window, b"\r\n\r\n") {
                Some(end) => (&rest[..end], start + end + 4),
                None if rest.len() > MAX_PART_HEADER_BYTES => {
                    return malformed(format!(
                        "part headers larger than {MAX_PART_HEADER_BYTES} bytes"
                    ));
                }
                None => return malformed("the body ends inside a part's headers"),
            }
        };
        let Some(len) = find(&body[data_start..], &next_delimiter) else {
            return malformed("the body ends before the closing multipart boundary");
        };
        let data = &body[data_start..data_start + len];
        pos = data_start + len + next_delimiter.len();
        parts.push(part(head, data)?);
    }
}

/// A part from its header block and bytes.
fn part<'a>(head: &[u8], data: &'a [u8]) -> Result<Part<'a>, Malformed> {
    let head = String::from_utf8_lossy(head);
    // Lines, with obsolete folding (a line starting with white space continues the last).
    let mut lines: Vec<String> = Vec::new();
    for line in head.split("\r\n").filter(|l| !l.is_empty()) {
        match lines.last_mut() {
            Some(last) if line.starts_with([' ', '\t']) => {
                last.push(' ');
                last.push_str(line.trim());
            }
            _ => lines.push(line.to_string()),
        }
    }
    let mut disposition = None;
    let mut content_type = None;
    for line in &lines {
        let Some((name, value)) = line.split_once(':') else {
            return malformed(format!("bad part header line '{}'", clip(line)));
        };
        match name.trim().to_ascii_lowercase().as_str() {
            "content-disposition" => disposition = Some(value.trim().to_string()),
            "content-type" => content_type = Some(value.trim().to_string()),
            _ => {}
        }
    }
    let Some(disposition) = disposition else {
        return malformed("a part has no Content-Disposition header");
    };
    let (kind, params) = header_params(&disposition)?;
    if !kind.eq_ignore_ascii_case("form-data") {
        return malformed(format!(
            "a part's Content-Disposition is '{}', expected form-data",
            clip(&kind)
        ));
    }
    let param = |key: &str| {
        params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let Some(name) = param("name") else {
        return malformed("a part's Content-Disposition has no name");
    };
    let filename = param("filename*")
        .and_then(|v| ext_value(&v))
        .or_else(|| param("filename"));
    Ok(Part {
        name,
        filename,
        content_type: content_type.filter(|t| !t.is_empty()),
        data,
    })
}

/// RFC 5987 `charset'language'percent-encoded` (UTF-8 and ASCII only).
fn ext_value(v: &str) -> Option<String> {
    let mut pieces = v.splitn(3, '\'');
    let charset = pieces.next()?;
    let _language = pieces.next()?;
    let text = pieces.next()?;
    (charset.eq_ignore_ascii_case("utf-8") || charset.eq_ignore_ascii_case("us-ascii"))
        .then(|| percent_decode(text, false))
}

/// `value; key=token; key="quoted"` as the leading value and lower-cased keys.
fn header_params(text: &str) -> Result<(String, Vec<(String, String)>), Malformed> {
    let (first, mut rest) = text.split_once(';').unwrap_or((text, ""));
    let mut params = Vec::new();
    loop {
        rest = rest.trim_start_matches([' ', '\t', ';']);
        if rest.is_empty() {
            return Ok((first.trim().to_string(), params));
        }
        let key_end = rest.find(['=', ';']).unwrap_or(rest.len());
        let key = rest[..key_end].trim().to_ascii_lowercase();
        rest = &rest[key_end..];
        let Some(after_eq) = rest.strip_prefix('=') else {
            params.push((key, String::new()));
            continue;
        };
        let after_eq = after_eq.trim_start();
        if let Some(quoted) = after_eq.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    '\\' if quoted[i + 1..].starts_with(['"', '\\']) => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    c => value.push(c),
                }
            }
            let Some(end) = end else {
                return malformed(format!("unterminated quoted value for '{}'", clip(&key)));
            };
            params.push((key, value));
            rest = &quoted[end..];
        } else {
            let end = after_eq.find(';').unwrap_or(after_eq.len());
            params.push((key, after_eq[..end].trim().to_string()));
            rest = &after_eq[end..];
        }
    }
}

/// The first 60 characters, for messages.
fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(60).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// The first index of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, _) = needle.split_first()?;
    let last_start = hay.len().checked_sub(needle.len())?;
    let mut i = 0;
    while i <= last_start {
        i += hay[i..=last_start].iter().position(|&b| b == first)?;
        if hay[i..].starts_with(needle) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The JSON object an `UploadFile` parameter receives.
pub fn upload_json(filename: &str, content_type: Option<&str>, data: &[u8]) -> Json {
    let mut file = Map::new();
    file.insert("filename".into(), json!(filename));
    file.insert(
        "content_type".into(),
        json!(content_type.unwrap_or(DEFAULT_FILE_TYPE)),
    );
    file.insert("size".into(), json!(data.len()));
    match std::str::from_utf8(data) {
        Ok(text) => {
            file.insert("content".into(), json!(text));
        }
        Err(_) => {
            file.insert("content".into(), json!(base64_encode(data)));
            file.insert("encoding".into(), json!("base64"));
        }
    }
    Json::Object(file)
}

/// An upload sent inside a JSON body, `{filename, content, content_type?, encoding?}`,
/// checked and completed to the shape [`upload_json`] builds.
pub fn upload_from_json(value: &Json) -> Result<Json, String> {
    const SHAPE: &str = "expected a file: send multipart/form-data, or an object \
         {\"filename\": str, \"content\": str} (with \"encoding\": \"base64\" for binary)";
    let Json::Object(m) = value else {
        return Err(SHAPE.into());
    };
    let text = |key: &str| match m.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(format!("'{key}' must be a string")),
    };
    let (Some(filename), Some(content)) = (text("filename")?, text("content")?) else {
        return Err(SHAPE.into());
    };
    let content_type = text("content_type")?;
    match text("encoding")? {
        None => Ok(upload_json(filename, content_type, content.as_bytes())),
        Some(e) if e.eq_ignore_ascii_case("base64") => {
            let bytes = base64_decode(content).ok_or("'content' is not valid base64")?;
            let mut file = upload_json(filename, content_type, &bytes);
            if let Some(obj) = file.as_object_mut() {
                // Keep the client's choice even when the bytes happen to be text.
                obj.insert("content".into(), json!(content));
                obj.insert("encoding".into(), json!("base64"));
            }
            Ok(file)
        }
        Some(other) => Err(format!(
            "unsupported encoding '{}'; use \"base64\" or leave it out",
            clip(other)
        )),
    }
}

/// Standard alphabet; decoding accepts padded and unpadded text.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Standard base64 with padding.
pub fn base64_encode(data: &[u8]) -> String {
    BASE64.encode(data)
}

/// Standard base64 (padding optional, ASCII white space ignored); `None` if invalid.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    BASE64.decode(digits).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CT: &str = "multipart/form-data; boundary=XyZ";

    fn body(parts: &[&str]) -> Vec<u8> {
        let mut out = String::new();
        for p in parts {
            out.push_str("--XyZ\r\n");
            out.push_str(p);
            out.push_str("\r\n");
        }
        out.push_str("--XyZ--\r\n");
        out.into_bytes()
    }

    #[test]
    fn boundaries() {
        assert_eq!(boundary(CT), Ok("XyZ".into()));
        assert_eq!(
            boundary("multipart/form-data; charset=utf-8; boundary=\"a b;c\""),
            Ok("a b;c".into())
        );
        assert!(boundary("multipart/form-data").is_err());
        assert!(boundary("multipart/form-data; boundary=").is_err());
        assert!(boundary(&format!("multipart/form-data; boundary={}", "x".repeat(71))).is_err());
    }

    #[test]
    fn fields_and_files() {
        let b = body(&[
            "Content-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\nworld",
            "content-disposition: form-data; name=\"f\"; filename=\"a \\\"q\\\".txt\"\r\nContent-Type: text/plain\r\n\r\nline1\r\n",
            "Content-Disposition: form-data; name=\"p\"; filename=\"C:\\dir\\x.bin\"\r\n\r\n",
        ]);
        let parts = parse(&b, "XyZ").expect("valid");
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0].name, "note");
        assert_eq!(parts[0].filename, None);
        assert_eq!(parts[0].data, b"hello\r\nworld");
        assert_eq!(parts[1].filename.as_deref(), Some("a \"q\".txt"));
        assert_eq!(parts[1].content_type.as_deref(), Some("text/plain"));
        assert_eq!(parts[1].data, b"line1\r\n");
        assert_eq!(parts[2].filename.as_deref(), Some("C:\\dir\\x.bin"));
        assert_eq!(parts[2].data, b"");
    }

    #[test]
    fn preamble_epilogue_padding_and_ext_names() {
        let text = b"preamble\r\n--XyZ  \r\nContent-Disposition: form-data; name=f; \
                    filename=\"x\"; filename*=UTF-8''%E2%82%AC.txt\r\n\r\n\x00\xff\r\n--XyZ--epilogue";
        let parts = parse(text, "XyZ").expect("valid");
        assert_eq!(parts[0].data, b"\x00\xff");
        assert_eq!(parts[0].name, "f");
        assert_eq!(parts[0].filename.as_deref(), Some("€.txt"));
        // A part without headers is a part without a name.
        let b = b"--XyZ\r\n\r\nx\r\n--XyZ--";
        assert!(parse(b, "XyZ").is_err());
        // No parts at all.
        assert_eq!(parse(b"--XyZ--\r\n", "XyZ"), Ok(vec![]));
    }

    #[test]
    fn malformed_bodies() {
        let bad = |b: &[u8]| parse(b, "XyZ").err().map(|m| m.0);
        assert!(bad(b"").is_some());
        assert!(bad(b"no boundary here").is_some());
        assert!(bad(b"--XyZ").is_some());
        assert!(bad(b"--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nx").is_some());
        assert!(bad(b"--XyZ\r\nContent-Disposition: form-data; name=a").is_some());
        assert!(bad(b"--XyZ\r\nno colon\r\n\r\nx\r\n--XyZ--").is_some());
        assert!(
            bad(b"--XyZ\r\nContent-Disposition: attachment; name=a\r\n\r\nx\r\n--XyZ--").is_some()
        );
        assert!(
            bad(b"--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--XyZ--").is_some()
        );
        assert!(bad(b"--XyZ\r\nContent-Disposition: form-data\r\n\r\nx\r\n--XyZ--").is_some());
        assert!(bad(b"--XyZjunk\r\n").is_some());
        let huge = format!(
            "--XyZ\r\nContent-Disposition: form-data; name=a\r\nX-Pad: {}\r\n\r\nx\r\n--XyZ--",
            "p".repeat(MAX_PART_HEADER_BYTES)
        );
        assert!(bad(huge.as_bytes()).is_some_and(|m| m.contains("larger")));
        let many: Vec<String> = (0..=MAX_PARTS)
            .map(|i| format!("Content-Disposition: form-data; name=\"f{i}\"\r\n\r\nv"))
            .collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(bad(&body(&many)).is_some_and(|m| m.contains("parts")));
        assert_eq!(
            parse(&body(&many[..MAX_PARTS]), "XyZ").map(|p| p.len()),
            Ok(MAX_PARTS)
        );
    }

    #[test]
    fn damaged_bodies_never_panic() {
        let b = body(&[
            "Content-Disposition: form-data; name=\"a\"; filename=\"q\\\"\"\r\nContent-Type: x\r\n\r\nv",
            "Content-Disposition: form-data; name=b\r\n\r\n",
        ]);
        for cut in 0..=b.len() {
            let _ = parse(&b[..cut], "XyZ");
        }
        for i in 0..b.len() {
            for byte in [b'\r', b'\n', b'"', b'\\', b';', b'-', 0xff] {
                let mut damaged = b.clone();
                damaged[i] = byte;
                let _ = parse(&damaged, "XyZ");
            }
        }
        for text in [
            "",
            ";",
            "=",
            "a;=",
            "a; b=\"",
            "a; b=\"\\",
            "a; b*=UTF-8''%",
            "é; é=é",
        ] {
            let _ = header_params(text);
            let _ = boundary(text);
        }
    }

    #[test]
    fn upload_objects() {
        assert_eq!(
            upload_json("a.txt", Some("text/plain"), "é".as_bytes()),
            json!({"filename": "a.txt", "content_type": "text/plain", "size": 2, "content": "é"})
        );
        assert_eq!(
            upload_json("b", None, &[0xff, 0, 1]),
            json!({"filename": "b", "content_type": DEFAULT_FILE_TYPE, "size": 3,
                   "content": "/wAB", "encoding": "base64"})
        );
        assert_eq!(
            upload_from_json(&json!({"filename": "x", "content": "aGk=", "encoding": "base64"})),
            Ok(
                json!({"filename": "x", "content_type": DEFAULT_FILE_TYPE, "size": 2,
                      "content": "aGk=", "encoding": "base64"})
            )
        );
        assert!(upload_from_json(&json!("text")).is_err());
        assert!(upload_from_json(&json!({"filename": "x"})).is_err());
        assert!(
            upload_from_json(&json!({"filename": "x", "content": "!", "encoding": "base64"}))
                .is_err()
        );
        assert!(upload_from_json(&json!({"filename": 1, "content": ""})).is_err());
    }

    #[test]
    fn base64_round_trips() {
        for n in 0..20u8 {
            let data: Vec<u8> = (0..n)
                .map(|i| i.wrapping_mul(37).wrapping_add(200))
                .collect();
            let text = base64_encode(&data);
            assert_eq!(text.len() % 4, 0);
            assert_eq!(base64_decode(&text), Some(data.clone()));
            assert_eq!(base64_decode(text.trim_end_matches('=')), Some(data));
        }
        assert_eq!(base64_encode(b"hello"), "aGVsbG8=");
        assert_eq!(base64_decode("a"), None);
        assert_eq!(base64_decode("aGk==="), None);
        assert_eq!(base64_decode("a$=="), None);
    }
}
