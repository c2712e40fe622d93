//! The device identity: the Ed25519 key the gateway knows this client by,
//! the signature of the connect challenge (payload v3, exactly as the
//! gateway rebuilds it), and the device token the gateway may issue.
//!
//! The identity file is JSON, mode 0600, created on first use and always
//! written whole to a temporary file that is then renamed over it, so a
//! crash never leaves half a key behind.

use std::fs;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bridge_util::Secret;
use bridge_util::owner_only::{self, Replace};
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Why the identity file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("OpenClaw device identity {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("OpenClaw device identity {path} is not valid: {reason}")]
    Invalid { path: String, reason: String },
    #[error("no randomness for a new OpenClaw device key: {0}")]
    Random(String),
}

/// The fields the device signature covers, in the gateway's order.
#[derive(Debug, Clone, Copy)]
pub struct SignedFields<'a> {
    pub device_id: &'a str,
    pub client_id: &'a str,
    pub client_mode: &'a str,
    pub role: &'a str,
    pub scopes: &'a [&'a str],
    pub signed_at_ms: u64,
    /// The token sent in `auth.token` (empty when none).
    pub token: &'a str,
    pub nonce: &'a str,
    pub platform: &'a str,
    /// `client.deviceFamily` (empty when not sent).
    pub device_family: &'a str,
}

/// The text a device signs: `v3|deviceId|clientId|clientMode|role|scopes|
/// signedAtMs|token|nonce|platform|deviceFamily`, scopes joined by `,`,
/// platform and device family trimmed with ASCII capitals lowered (the
/// gateway's `buildDeviceAuthPayloadV3`).
pub fn payload_v3(fields: &SignedFields<'_>) -> String {
    [
        "v3",
        fields.device_id,
        fields.client_id,
        fields.client_mode,
        fields.role,
        &fields.scopes.join(","),
        &fields.signed_at_ms.to_string(),
        fields.token,
        fields.nonce,
        &normalize_metadata(fields.platform),
        &normalize_metadata(fields.device_family),
    ]
    .join("|")
}

fn normalize_metadata(value: &str) -> String {
    value.trim().to_ascii_lowercase()
}

/// The device id of a raw 32-byte public key: its SHA-256 as lowercase hex.
pub fn device_id_of(public_key: &[u8; 32]) -> String {
    bridge_util::ids::hex(&Sha256::digest(public_key))
}

/// Whether `signature` (base64url) is `public_key`'s (base64url, raw 32
/// bytes) signature of `payload`. False for anything malformed.
pub fn verify(public_key: &str, payload: &str, signature: &str) -> bool {
    let Some(key) = decode_array::<32>(public_key) else {
        return false;
    };
    let Some(signature) = decode_array::<64>(signature) else {
        return false;
    };
    VerifyingKey::from_bytes(&key)
        .map(|key| {
            key.verify(payload.as_bytes(), &Signature::from_bytes(&signature))
                .is_ok()
        })
        .unwrap_or(false)
}

fn decode_array<const N: usize>(text: &str) -> Option<[u8; N]> {
    URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .ok()?
        .try_into()
        .ok()
}

/// A device token the gateway issued in `hello-ok`, for the gateway that
/// issued it.
#[derive(Clone)]
pub(crate) struct DeviceToken {
    pub token: Secret,
    pub gateway_url: String,
    pub role: Option<String>,
    pub scopes: Vec<String>,
    pub issued_at_ms: Option<u64>,
}

/// A persistent device identity, loaded from or created in its file.
pub(crate) struct DeviceIdentity {
    path: PathBuf,
    key: SigningKey,
    device_id: String,
    public_key: String,
    token: Option<DeviceToken>,
}

/// The file's shape. Not `Debug`: it holds the key seed.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IdentityFile {
    version: u32,
    device_id: String,
    public_key: String,
    private_key_seed: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    device_token: Option<TokenFile>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenFile {
    token: String,
    gateway_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    role: Option<String>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    issued_at_ms: Option<u64>,
}

const FILE_VERSION: u32 = 1;

/// Largest identity file read (one is a few hundred bytes).
const MAX_IDENTITY_BYTES: u64 = 64 * 1024;

impl DeviceIdentity {
    /// The identity in `path`, or a new one written there (parents created,
    /// mode 0700 for a new directory, 0600 for the file).
    pub fn load_or_create(path: &Path) -> Result<Self, IdentityError> {
        // A private key: never read through a symlink or from another
        // user's file, and never more than an identity's size.
        match owner_only::read(path, MAX_IDENTITY_BYTES) {
            Ok(bytes) => Self::parse(path, &String::from_utf8_lossy(&bytes)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                let mut seed = [0u8; 32];
                getrandom::fill(&mut seed).map_err(|err| IdentityError::Random(err.to_string()))?;
                let identity = Self::from_seed(path, seed, None);
                identity.save()?;
                tracing::info!(path = %path.display(), device_id = %identity.device_id, "created the OpenClaw device identity");
                Ok(identity)
            }
            Err(source) => Err(io_error(path, source)),
        }
    }

    fn from_seed(path: &Path, seed: [u8; 32], token: Option<DeviceToken>) -> Self {
        let key = SigningKey::from_bytes(&seed);
        let raw = key.verifying_key().to_bytes();
        Self {
            path: path.to_owned(),
            device_id: device_id_of(&raw),
            public_key: URL_SAFE_NO_PAD.encode(raw),
            key,
            token,
        }
    }

    fn parse(path: &Path, text: &str) -> Result<Self, IdentityError> {
        let invalid = |reason: String| IdentityError::Invalid {
            path: path.display().to_string(),
            reason,
        };
        let file: IdentityFile =
            serde_json::from_str(text).map_err(|err| invalid(format!("not its JSON: {err}")))?;
        if file.version != FILE_VERSION {
            return Err(invalid(format!("unknown version {}", file.version)));
        }
        let seed = decode_array::<32>(&file.private_key_seed)
            .ok_or_else(|| invalid("privateKeySeed is not 32 bytes of base64url".to_owned()))?;
        let token = file.device_token.map(|token| DeviceToken {
            token: Secret::new(token.token),
            gateway_url: token.gateway_url,
            role: token.role,
            scopes: token.scopes,
            issued_at_ms: token.issued_at_ms,
        });
        let identity = Self::from_seed(path, seed, token);
        if identity.device_id != file.device_id || identity.public_key != file.public_key {
            return Err(invalid(
                "deviceId or publicKey does not match the key seed".to_owned(),
            ));
        }
        tighten_mode(path);
        Ok(identity)
    }

    pub fn device_id(&self) -> &str {
        &self.device_id
    }

    /// The raw public key, base64url without padding.
    pub fn public_key(&self) -> &str {
        &self.public_key
    }

    /// `payload` signed, base64url without padding.
    pub fn sign(&self, payload: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.key.sign(payload.as_bytes()).to_bytes())
    }

    /// The device token issued by the gateway at `url`, if any.
    pub fn token_for(&self, url: &str) -> Option<&Secret> {
        self.token
            .as_ref()
            .filter(|token| token.gateway_url == url)
            .map(|token| &token.token)
    }

    /// Keeps `token` (replacing any other) and writes the file.
    pub fn store_token(&mut self, token: DeviceToken) -> Result<(), IdentityError> {
        self.token = Some(token);
        self.save()
    }

    /// Forgets the device token (a stale one the gateway refused) and
    /// writes the file.
    pub fn drop_token(&mut self) -> Result<(), IdentityError> {
        if self.token.take().is_some() {
            self.save()?;
        }
        Ok(())
    }

    fn save(&self) -> Result<(), IdentityError> {
        let file = IdentityFile {
            version: FILE_VERSION,
            device_id: self.device_id.clone(),
            public_key: self.public_key.clone(),
            private_key_seed: URL_SAFE_NO_PAD.encode(self.key.to_bytes()),
            device_token: self.token.as_ref().map(|token| TokenFile {
                token: token.token.expose().to_owned(),
                gateway_url: token.gateway_url.clone(),
                role: token.role.clone(),
                scopes: token.scopes.clone(),
                issued_at_ms: token.issued_at_ms,
            }),
        };
        let text = serde_json::to_string_pretty(&file).map_err(|err| IdentityError::Invalid {
            path: self.path.display().to_string(),
            reason: err.to_string(),
        })?;
        owner_only::write_atomically(&self.path, text.as_bytes(), Replace::Private)
            .map_err(|source| io_error(&self.path, source))
    }
}

/// An identity file readable by others is set back to 0600.
fn tighten_mode(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(metadata) = fs::metadata(path)
            && metadata.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(path = %path.display(), "the OpenClaw device identity was readable by others; set to mode 0600");
            let _ = fs::set_permissions(path, fs::Permissions::from_mode(0o600));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

fn io_error(path: &Path, source: std::io::Error) -> IdentityError {
    IdentityError::Io {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_and_family_are_trimmed_and_lowered() {
        let payload = payload_v3(&SignedFields {
            device_id: "d",
            client_id: "gateway-client",
            client_mode: "backend",
            role: "operator",
            scopes: &["operator.read", "operator.write"],
            signed_at_ms: 17,
            token: "",
            nonce: "n",
            platform: " Linux ",
            device_family: "",
        });
        assert_eq!(
            payload,
            "v3|d|gateway-client|backend|operator|operator.read,operator.write|17||n|linux|"
        );
    }

    #[test]
    fn a_signature_verifies_and_a_changed_payload_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let identity = DeviceIdentity::load_or_create(&dir.path().join("id.json")).unwrap();
        let signature = identity.sign("payload");
        assert!(verify(identity.public_key(), "payload", &signature));
        assert!(!verify(identity.public_key(), "payload!", &signature));
        assert!(!verify("not a key", "payload", &signature));
    }

    #[test]
    fn a_file_whose_id_does_not_match_its_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("id.json");
        DeviceIdentity::load_or_create(&path).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
        value["deviceId"] = "00".into();
        fs::write(&path, value.to_string()).unwrap();
        let err = DeviceIdentity::load_or_create(&path).err().unwrap();
        assert!(err.to_string().contains("does not match"), "{err}");
    }

    #[test]
    fn an_identity_behind_a_planted_symlink_is_refused_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("someone-elses.json");
        DeviceIdentity::load_or_create(&elsewhere).unwrap();
        let path = dir.path().join("openclaw-device.json");
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let err = DeviceIdentity::load_or_create(&path).err().unwrap();
        assert!(err.to_string().contains("symbolic links"), "{err}");
    }
}
