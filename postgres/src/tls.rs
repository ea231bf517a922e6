//! TLS to the server, as libpq's `sslmode` says (rustls with ring; no OpenSSL):
//!
//! | `sslmode` | encrypted | certificate checked |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (the default) | when the server offers it | no |
//! | `require` | always | only against `sslrootcert` when one is given |
//! | `verify-ca` | always | chain, against `sslrootcert` (else the web's roots) |
//! | `verify-full` | always | chain and host name |
//!
//! `sslrootcert` names a PEM file of trusted certificates. As in libpq, `prefer` and `require`
//! without a root stop an eavesdropper, not a server impersonated on the path: use `verify-full`
//! across networks you do not control.

use std::sync::Arc;

use mnemon_backend::{Error, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// How a connection is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP.
    Disable,
    /// TLS when the server offers it, unverified.
    Prefer,
    /// TLS always; verified against `sslrootcert` when given.
    Require,
    /// TLS always; the chain verified.
    VerifyCa,
    /// TLS always; the chain and the host name verified.
    VerifyFull,
}

/// The TLS settings of a connection string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    /// `sslmode`.
    pub mode: SslMode,
    /// `sslrootcert`: a PEM file of trusted certificates.
    pub root: Option<String>,
}

impl Tls {
    /// Takes `sslmode` and `sslrootcert` out of a connection string (a URL's query or libpq's
    /// `key=value` form): the rest, and the settings. Unknown modes are refused, naming them.
    pub fn split(conn: &str) -> Result<(String, Tls)> {
        let mut tls = Tls { mode: SslMode::Prefer, root: None };
        let mut take = |key: &str, value: &str| -> Result<bool> {
            match key {
                "sslmode" => {
                    tls.mode = match value {
                        "disable" => SslMode::Disable,
                        "allow" | "prefer" => SslMode::Prefer,
                        "require" => SslMode::Require,
                        "verify-ca" => SslMode::VerifyCa,
                        "verify-full" => SslMode::VerifyFull,
                        other => {
                            return Err(Error::InvalidInput {
                                field: "sslmode".into(),
                                reason: format!(
                                "{other:?} is not disable, allow, prefer, require, verify-ca or verify-full"
                            ),
                            })
                        }
                    };
                    Ok(true)
                }
                "sslrootcert" => {
                    tls.root = Some(value.to_owned());
                    Ok(true)
                }
                _ => Ok(false),
            }
        };
        let rest = if conn.starts_with("postgres://") || conn.starts_with("postgresql://") {
            match conn.split_once('?') {
                None => conn.to_owned(),
                Some((base, query)) => {
                    let mut kept = Vec::new();
                    for pair in query.split('&') {
                        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                        if !take(k, &percent_decode(v))? {
                            kept.push(pair);
                        }
                    }
                    if kept.is_empty() {
                        base.to_owned()
                    } else {
                        format!("{base}?{}", kept.join("&"))
                    }
                }
            }
        } else {
            let mut kept = Vec::new();
            for word in conn.split_whitespace() {
                let (k, v) = word.split_once('=').unwrap_or((word, ""));
                if !take(k.trim(), v.trim())? {
                    kept.push(word);
                }
            }
            kept.join(" ")
        };
        Ok((rest, tls))
    }

    /// The rustls client configuration for this mode (`None` for `disable`).
    pub fn client_config(&self) -> Result<Option<rustls::ClientConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match (self.mode, &self.root) {
            (SslMode::Disable, _) => return Ok(None),
            (SslMode::Prefer, _) | (SslMode::Require, None) => {
                Arc::new(Lenient { provider: Arc::clone(&provider), chain: None })
            }
            (SslMode::Require | SslMode::VerifyCa, root) => Arc::new(Lenient {
                provider: Arc::clone(&provider),
                chain: Some(self.webpki(root.as_deref(), &provider)?),
            }),
            (SslMode::VerifyFull, root) => self.webpki(root.as_deref(), &provider)?,
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Database(format!("TLS: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(Some(config))
    }

    fn webpki(
        &self,
        root: Option<&str>,
        provider: &Arc<CryptoProvider>,
    ) -> Result<Arc<WebPkiServerVerifier>> {
        let mut roots = RootCertStore::empty();
        match root {
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            Some(path) => {
                let bad = |reason: String| Error::InvalidInput { field: "sslrootcert".into(), reason };
                let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                    .map_err(|e| bad(format!("{path}: {e}")))?
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| bad(format!("{path}: {e}")))?;
                if certs.is_empty() {
                    return Err(bad(format!("{path} holds no PEM certificate")));
                }
                for c in certs {
                    roots.add(c).map_err(|e| bad(format!("{path}: {e}")))?;
                }
            }
        }
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider))
            .build()
            .map_err(|e| Error::Database(format!("TLS: {e}")))
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, ..) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A verifier that checks less than the full web PKI: with no `chain`, the certificate not at
/// all (`prefer`, and `require` without a root); with one, the chain but not the host name
/// (`verify-ca`). The handshake's signatures are always checked.
#[derive(Debug)]
struct Lenient {
    provider: Arc<CryptoProvider>,
    chain: Option<Arc<WebPkiServerVerifier>>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else { return Ok(ServerCertVerified::assertion()) };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_settings_leave_the_connection_string() {
        let (rest, tls) =
            Tls::split("postgres://u:p@db:5432/m?schema=a&sslmode=verify-full&sslrootcert=%2Fca.pem")
                .unwrap();
        assert_eq!(rest, "postgres://u:p@db:5432/m?schema=a");
        assert_eq!(tls, Tls { mode: SslMode::VerifyFull, root: Some("/ca.pem".into()) });
        let (rest, tls) = Tls::split("postgres://db/m").unwrap();
        assert_eq!((rest.as_str(), tls.mode), ("postgres://db/m", SslMode::Prefer));
        let (rest, tls) = Tls::split("host=db sslmode=disable dbname=m").unwrap();
        assert_eq!((rest.as_str(), tls.mode), ("host=db dbname=m", SslMode::Disable));
        let e = Tls::split("postgres://db/m?sslmode=sometimes").unwrap_err();
        assert!(e.to_string().contains("sslmode") && e.to_string().contains("sometimes"), "{e}");
        assert!(Tls { mode: SslMode::Disable, root: None }.client_config().unwrap().is_none());
        let e =
            Tls { mode: SslMode::VerifyFull, root: Some("/no/such.pem".into()) }.client_config().unwrap_err();
        assert!(e.to_string().contains("sslrootcert"), "{e}");
    }
}
