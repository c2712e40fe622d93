//! Private keys shaped like the real thing, for redaction tests: random
//! bytes in base64, wrapped and framed the way OpenSSL (PEM, 64 wide) and
//! OpenSSH (70 wide) write them. Assembled at run time, so no file of the
//! project holds anything a secret scanner would flag, and no key is real.

/// Deterministic pseudo-random bytes (an LCG).
pub fn random_bytes(length: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(7);
    (0..length)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 56) as u8
        })
        .collect()
}

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let word = (u32::from(chunk[0]) << 16)
            | (u32::from(chunk.get(1).copied().unwrap_or(0)) << 8)
            | u32::from(chunk.get(2).copied().unwrap_or(0));
        for index in 0..4 {
            if index <= chunk.len() {
                out.push(char::from(
                    ALPHABET[(word >> (18 - 6 * index) & 63) as usize],
                ));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `text` cut into lines of `width` characters (ASCII only).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    text.as_bytes()
        .chunks(width)
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect()
}

/// A private key: header, body lines (the last one shorter), footer.
#[derive(Debug, Clone)]
pub struct FakeKey {
    pub header: String,
    pub body: Vec<String>,
    pub footer: String,
}

impl FakeKey {
    /// An RSA key as OpenSSL writes it: DER (`30 82 …`) in base64, 64 wide.
    pub fn pem(seed: u64) -> Self {
        let mut der = vec![
            0x30, 0x82, 0x04, 0xa4, 0x02, 0x01, 0x00, 0x02, 0x82, 0x01, 0x01,
        ];
        der.extend(random_bytes(1180, seed));
        Self::armored("RSA PRIVATE KEY", wrap(&base64(&der), 64))
    }

    /// An ed25519 key as OpenSSH writes it: its structure (runs of zero
    /// bytes, names) in base64, 70 wide.
    pub fn openssh(seed: u64) -> Self {
        let mut blob = b"openssh-key-v1\0".to_vec();
        let string = |blob: &mut Vec<u8>, part: &[u8]| {
            blob.extend(u32::try_from(part.len()).unwrap_or(0).to_be_bytes());
            blob.extend(part);
        };
        string(&mut blob, b"none");
        string(&mut blob, b"none");
        string(&mut blob, b"");
        blob.extend(1u32.to_be_bytes());
        blob.extend(51u32.to_be_bytes());
        string(&mut blob, b"ssh-ed25519");
        string(&mut blob, &random_bytes(32, seed));
        blob.extend(144u32.to_be_bytes());
        blob.extend(random_bytes(8, seed + 1));
        string(&mut blob, b"ssh-ed25519");
        blob.extend(random_bytes(100, seed + 2));
        Self::armored("OPENSSH PRIVATE KEY", wrap(&base64(&blob), 70))
    }

    /// The same key with its body wrapped at `width` (MIME tools wrap at
    /// 76; some write one long line).
    pub fn wrapped_at(self, width: usize) -> Self {
        let joined: String = self.body.concat();
        Self {
            body: wrap(&joined, width),
            ..self
        }
    }

    fn armored(label: &str, body: Vec<String>) -> Self {
        Self {
            header: format!("-----BEGIN {label}-----"),
            body,
            footer: format!("-----END {label}-----"),
        }
    }

    /// Every line (header, body, footer), each after `prefix`.
    pub fn lines_with(&self, prefix: &str) -> Vec<String> {
        std::iter::once(&self.header)
            .chain(&self.body)
            .chain(std::iter::once(&self.footer))
            .map(|line| format!("{prefix}{line}"))
            .collect()
    }

    /// The key as text, each line after `prefix`, without a final newline.
    pub fn text_with(&self, prefix: &str) -> String {
        self.lines_with(prefix).join("\n")
    }

    /// Whether `text` shows any body line, or the first 12 characters of
    /// one: what a redacted text must never do.
    pub fn leaks_into(&self, text: &str) -> Option<&str> {
        self.body
            .iter()
            .map(|line| &line[..line.len().min(12)])
            .find(|start| text.contains(start))
    }
}
