//! TLS to PostgreSQL as `sslmode` says, against a real server: the project's test server speaks
//! plain TCP, so a proxy here answers PostgreSQL's `SSLRequest`, completes a real TLS handshake
//! (rustls, certificates made for the test) and relays the decrypted protocol to the server.
//! Each mode is checked for what it must accept and what it must refuse.

use crate::common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mnemon::embed::HashingEmbedder;
use mnemon::Memory;
use mnemon_postgres::PgBackend;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// PostgreSQL's `SSLRequest`: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 4, 210, 22, 47];

/// A certificate authority, and a server certificate it signed for `names`.
struct Pki {
    ca_pem: String,
    server_chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    server_key: rustls::pki_types::PrivateKeyDer<'static>,
}

fn pki(names: &[&str]) -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    Pki {
        ca_pem: ca.pem(),
        server_chain: vec![cert.der().clone()],
        server_key: rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    }
}

/// A proxy in front of the test server, on its own thread; counts the TLS sessions it served.
struct Proxy {
    addr: SocketAddr,
    tls_sessions: Arc<AtomicUsize>,
}

fn proxy(upstream: SocketAddr, pki: Option<&Pki>) -> Proxy {
    let acceptor = pki.map(|p| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(p.server_chain.clone(), p.server_key.clone_key())
            .unwrap();
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    });
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let tls_sessions = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&tls_sessions);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((mut client, _)) = listener.accept().await else { return };
                let (acceptor, count) = (acceptor.clone(), Arc::clone(&count));
                tokio::spawn(async move {
                    let mut server = tokio::net::TcpStream::connect(upstream).await.unwrap();
                    let mut first = [0u8; 8];
                    if client.read_exact(&mut first).await.is_err() {
                        return;
                    }
                    if first != SSL_REQUEST {
                        server.write_all(&first).await.unwrap();
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        return;
                    }
                    let Some(acceptor) = acceptor else {
                        // A server without TLS says so, and the client may go on in plain text.
                        client.write_all(b"N").await.unwrap();
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        return;
                    };
                    client.write_all(b"S").await.unwrap();
                    let Ok(mut tls) = acceptor.accept(client).await else { return };
                    count.fetch_add(1, Ordering::SeqCst);
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut server).await;
                });
            }
        });
    });
    Proxy { addr, tls_sessions }
}

/// The test server's address.
fn upstream() -> SocketAddr {
    let url = common::server();
    let host = url.split('@').nth(1).unwrap().split('/').next().unwrap();
    host.parse().unwrap()
}

/// `url` (a fresh database on the test server) reached through `addr`, with `params` added.
fn through(url: &str, addr: SocketAddr, params: &str) -> String {
    let (head, rest) = url.split_once('@').unwrap();
    let db = rest.split_once('/').unwrap().1;
    format!("{head}@{addr}/{db}?{params}")
}

fn write_pem(dir: &Path, name: &str, pem: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, pem).unwrap();
    path
}

/// Opens a store at `url` and writes and reads one note: the whole protocol, not only a login.
fn use_store(url: &str) -> mnemon::Result<()> {
    let m = Memory::builder(Arc::new(PgBackend::new(url)?)).embedder(HashingEmbedder::default()).open()?;
    m.remember(&[mnemon::notes::NewNote::new("Ana lives in Lisbon.", "2026-03-01T10:00:00")], "ana")?;
    assert_eq!(m.count("ana")?.notes, 1);
    Ok(())
}

#[test]
fn sslmode_encrypts_and_verifies_as_libpq_does() {
    let dir = tempfile::tempdir().unwrap();
    let url = common::fresh_db("tls");
    let good = pki(&["127.0.0.1", "localhost"]);
    let elsewhere = pki(&["db.example"]);
    let stranger = pki(&["127.0.0.1"]);
    let ca = write_pem(dir.path(), "ca.pem", &good.ca_pem);
    let other_ca = write_pem(dir.path(), "other.pem", &stranger.ca_pem);
    let elsewhere_ca = write_pem(dir.path(), "elsewhere.pem", &elsewhere.ca_pem);
    let tls = proxy(upstream(), Some(&good));
    let misnamed = proxy(upstream(), Some(&elsewhere));
    let plain = proxy(upstream(), None);
    let (ca, other_ca, elsewhere_ca) = (ca.display(), other_ca.display(), elsewhere_ca.display());

    // Accepted, each over TLS.
    for (proxy, params) in [
        (&tls, format!("sslmode=verify-full&sslrootcert={ca}")),
        (&tls, "sslmode=require".to_owned()),
        (&tls, format!("sslmode=require&sslrootcert={ca}")),
        (&tls, "sslmode=prefer".to_owned()),
        (&misnamed, format!("sslmode=verify-ca&sslrootcert={elsewhere_ca}")),
    ] {
        let before = proxy.tls_sessions.load(Ordering::SeqCst);
        use_store(&through(&url, proxy.addr, &params)).unwrap_or_else(|e| panic!("{params}: {e}"));
        assert!(proxy.tls_sessions.load(Ordering::SeqCst) > before, "{params}: not over TLS");
    }
    // Accepted in plain text: asked for, or the server offers no TLS and the mode allows that.
    let before = tls.tls_sessions.load(Ordering::SeqCst);
    use_store(&through(&url, tls.addr, "sslmode=disable")).unwrap();
    assert_eq!(tls.tls_sessions.load(Ordering::SeqCst), before, "disable used TLS");
    use_store(&through(&url, plain.addr, "sslmode=prefer")).unwrap();

    // Refused: an unknown authority, a name the certificate does not hold, no TLS at all.
    let mut refused = 0;
    for (proxy, params, why) in [
        (&tls, format!("sslmode=verify-full&sslrootcert={other_ca}"), "certificate"),
        (&tls, format!("sslmode=verify-ca&sslrootcert={other_ca}"), "certificate"),
        (&tls, format!("sslmode=require&sslrootcert={other_ca}"), "certificate"),
        (&tls, "sslmode=verify-full".to_owned(), "certificate"),
        (&misnamed, format!("sslmode=verify-full&sslrootcert={elsewhere_ca}"), "certificate"),
        (&plain, "sslmode=require".to_owned(), "TLS"),
        (&plain, format!("sslmode=verify-full&sslrootcert={ca}"), "TLS"),
    ] {
        let e = use_store(&through(&url, proxy.addr, &params)).expect_err(&params).to_string();
        assert!(e.to_lowercase().contains(&why.to_lowercase()), "{params}: {e}");
        assert!(!e.contains("BEGIN CERTIFICATE"));
        refused += 1;
    }
    eprintln!("{refused} connections that must fail were refused");
    common::drop_db(&url);
}
