//! A team instance over HTTPS with a certificate from a private CA (or a
//! self-signed one): the CLI says the certificate is not trusted and how to
//! trust it, and trusts it once `SSL_CERT_FILE` names the CA.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::support::planshare;

/// A private CA and a `localhost` certificate it signed.
struct Chain {
    ca_pem: String,
    leaf: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
}

fn private_ca_chain() -> Chain {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "planshare test CA");
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate().unwrap())
        .unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    Chain {
        ca_pem: ca.pem(),
        leaf: leaf.der().clone(),
        key: PrivatePkcs8KeyDer::from(leaf_key.serialize_der()),
    }
}

/// An HTTPS server on localhost that answers every request with planshare's
/// discovery answer (portal on this origin) and counts the requests that
/// got through the handshake.
async fn discovery_over_tls(chain: &Chain) -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![chain.leaf.clone()],
            PrivateKeyDer::Pkcs8(chain.key.clone_key()),
        )
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = served.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let count = count.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let body = r#"{"service":"planshare","version":"0","api":"/api/v1","reviews":true,"portal":""}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(answer.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (port, served)
}

#[tokio::test]
async fn an_untrusted_certificate_is_named_and_ssl_cert_file_trusts_a_private_ca() {
    let chain = private_ca_chain();
    let (port, served) = discovery_over_tls(&chain).await;
    let base = format!("https://localhost:{port}");
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.md");
    std::fs::write(&plan, "# Plan\n\nShip it.\n").unwrap();
    let plan = plan.to_str().unwrap();

    // Not trusted: the warning says so, and how to trust it, instead of
    // "cannot connect"; the link falls back to upstream's portal.
    let run = planshare(&["share", plan], &[("PLANNOTATOR_PASTE_URL", &base)], "").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("TLS certificate is not trusted")
            && run.stderr.contains("SSL_CERT_FILE"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("cannot connect"), "{}", run.stderr);
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 0);

    // A review command says it too (exit 7: the review service unavailable).
    let run = planshare(
        &["review", "start", plan],
        &[("PLANNOTATOR_PASTE_URL", &base)],
        "",
    )
    .await;
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert!(
        run.stderr.contains("TLS certificate is not trusted"),
        "{}",
        run.stderr
    );

    // Trusted through SSL_CERT_FILE: discovery answers, and the link opens
    // on the team instance's own portal.
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &chain.ca_pem).unwrap();
    let run = planshare(
        &["share", plan],
        &[
            ("PLANNOTATOR_PASTE_URL", &base),
            ("SSL_CERT_FILE", ca.to_str().unwrap()),
        ],
        "",
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with(&format!("{base}/#")),
        "{}",
        run.stdout
    );
    assert!(served.load(std::sync::atomic::Ordering::SeqCst) >= 1);
}
