//! HTTPS served by the server itself (`server.tls_cert` / `server.tls_key`).
//!
//! Browsers give a page WebCrypto, which the portal decrypts shares with,
//! only on HTTPS or localhost origins: a team instance reached as
//! `http://team-host:19433` cannot open an encrypted link. With both files
//! set, the main listener speaks TLS (rustls, on the aws-lc-rs provider).
//!
//! - [`load`] reads the two PEM files into a certificate and key, and says
//!   which file is wrong and how when they do not load (`check-config` and
//!   start-up refuse them; the key's bytes are never printed or logged).
//! - [`Tls`] holds the rustls configuration. Its certificate comes from a
//!   resolver whose current pair is swapped atomically, so a renewal needs
//!   no restart: [`Tls::watch_files`] looks at both files' modification
//!   time, size and inode every [`POLL_EVERY`] (and at once on `SIGHUP`)
//!   and loads them again when they changed. New connections get the new
//!   certificate; a pair that does not load keeps the old one serving and
//!   logs a warning naming the file.
//! - [`TlsSocket`] is a TLS connection as hyper sees it. Its read side is
//!   driven by a task of its own, which is how [`paste_api::ClientGone`]
//!   learns that the client left (see [`TlsSocket`]).

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, PoisonError, RwLock};
use std::task::{Context, Poll, ready};
use std::time::{Duration, SystemTime};

use paste_api::{ClientGone, GoneFuture};
use rustls::pki_types::pem::{self, PemObject as _};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::settings::ServerConfig;

/// How often the certificate and key files are looked at for a change.
pub const POLL_EVERY: Duration = Duration::from_secs(5);

/// TLS handshakes that did not complete (`reason`: `plain_http` — a plain
/// HTTP request on the HTTPS port, `timeout` — no complete handshake and
/// request byte within `server.first_byte_timeout_secs`, `failed` — the
/// handshake itself failed, e.g. a client that does not trust the
/// certificate).
pub const HANDSHAKE_FAILURES: &str = "planshare_tls_handshake_failures_total";

/// The two files of `[server]`, with the settings they come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// `server.tls_cert`: the certificate chain.
    pub cert: PathBuf,
    /// `server.tls_key`: its private key.
    pub key: PathBuf,
}

impl TlsFiles {
    /// The files `config` names, when it serves HTTPS.
    pub fn from_config(config: &ServerConfig) -> Option<TlsFiles> {
        config.tls_enabled().then(|| TlsFiles {
            cert: config.tls_cert.clone(),
            key: config.tls_key.clone(),
        })
    }
}

/// Why the certificate or the key did not load: the setting, its file and
/// what is wrong with it. Never carries any of the key's bytes.
#[derive(Debug, thiserror::Error)]
#[error("{setting} {}: {problem}", file.display())]
pub struct TlsFileError {
    /// `server.tls_cert` or `server.tls_key`.
    pub setting: &'static str,
    /// The file.
    pub file: PathBuf,
    /// What is wrong.
    pub problem: String,
}

const CERT: &str = "server.tls_cert";
const KEY: &str = "server.tls_key";

/// Reads and checks the certificate chain and its private key: both parse,
/// the key is of a kind rustls signs with, and it belongs to the first
/// certificate of the chain.
pub fn load(files: &TlsFiles) -> Result<Arc<CertifiedKey>, TlsFileError> {
    let wrong = |setting, file: &Path, problem: String| TlsFileError {
        setting,
        file: file.to_owned(),
        problem,
    };
    let read = |setting, file: &Path| {
        std::fs::read(file).map_err(|e| wrong(setting, file, format!("cannot read it: {e}")))
    };
    let cert_pem = read(CERT, &files.cert)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| wrong(CERT, &files.cert, pem_problem(&e)))?;
    if chain.is_empty() {
        return Err(wrong(
            CERT,
            &files.cert,
            "no certificate in it (expected PEM blocks \"-----BEGIN CERTIFICATE-----\", the server's certificate first)".into(),
        ));
    }
    let key_pem = read(KEY, &files.key)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| match e {
        pem::Error::NoItemsFound => wrong(
            KEY,
            &files.key,
            "no private key in it (expected a PEM block \"-----BEGIN PRIVATE KEY-----\" (PKCS#8), \"RSA PRIVATE KEY\" or \"EC PRIVATE KEY\")".into(),
        ),
        other => wrong(KEY, &files.key, pem_problem(&other)),
    })?;
    drop(key_pem);
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    let private = provider
        .key_provider
        .load_private_key(key)
        .map_err(|_| {
            wrong(
                KEY,
                &files.key,
                "the private key cannot be used (not an RSA, ECDSA or Ed25519 key this server can sign with, or damaged)".into(),
            )
        })?;
    let certified = CertifiedKey::new(chain, private);
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {}
        Err(rustls::Error::InconsistentKeys(_)) => {
            return Err(wrong(
                KEY,
                &files.key,
                format!(
                    "this private key does not belong to the certificate in {CERT} {} (their public keys differ)",
                    files.cert.display()
                ),
            ));
        }
        Err(error) => {
            return Err(wrong(
                CERT,
                &files.cert,
                format!("the first certificate cannot be parsed: {error}"),
            ));
        }
    }
    Ok(Arc::new(certified))
}

/// What is wrong with a PEM file, in words that quote none of its contents
/// (a key file's lines are secret).
fn pem_problem(error: &pem::Error) -> String {
    match error {
        pem::Error::MissingSectionEnd { .. } => {
            "not valid PEM: a block has no \"-----END …-----\" line (file cut off?)".into()
        }
        pem::Error::IllegalSectionStart { .. } => {
            "not valid PEM: a \"-----BEGIN\" line is malformed".into()
        }
        pem::Error::Base64Decode(_) => "not valid PEM: a block's base64 does not decode".into(),
        pem::Error::Io(error) => format!("cannot read it: {error}"),
        pem::Error::NoItemsFound => "nothing usable in it".into(),
        _ => "not valid PEM".into(),
    }
}

/// The certificate handed to every handshake: swapped whole by a reload,
/// so a handshake sees the old pair or the new one, never half of each.
struct Current(RwLock<Arc<CertifiedKey>>);

impl Current {
    fn get(&self) -> Arc<CertifiedKey> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, key: Arc<CertifiedKey>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = key;
    }
}

impl std::fmt::Debug for Current {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Nothing of the key.
        f.write_str("Current(..)")
    }
}

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.get())
    }
}

/// The main listener's TLS: the acceptor, and the files it reloads.
pub struct Tls {
    acceptor: TlsAcceptor,
    current: Arc<Current>,
    files: TlsFiles,
    /// The files as they were when last loaded (or tried).
    loaded: Stamp,
}

impl Tls {
    /// Loads `files` (see [`load`]) into a rustls server configuration:
    /// TLS 1.2 and 1.3, HTTP/1.1 by ALPN, no client certificates.
    pub fn new(files: TlsFiles) -> anyhow::Result<Tls> {
        let loaded = Stamp::of(&files);
        let key = load(&files)?;
        let current = Arc::new(Current(RwLock::new(key)));
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            current,
            files,
            loaded,
        })
    }

    /// What accepts the TLS connections.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        self.acceptor.clone()
    }

    /// Reloads the files whenever they change (looked at every
    /// [`POLL_EVERY`]) or `SIGHUP` arrives, until the returned task is
    /// aborted. A pair that does not load leaves the certificate in use as
    /// it is and logs a warning naming the file; it is tried again once
    /// either file changes again (a renewal that writes the certificate and
    /// the key one after the other is picked up once both are written).
    pub fn watch_files(&self) -> tokio::task::JoinHandle<()> {
        let current = self.current.clone();
        let files = self.files.clone();
        let mut loaded = self.loaded.clone();
        // Listened for before this returns: from then on SIGHUP reloads
        // rather than ends the process (its default).
        let mut hangup = hangups();
        tokio::spawn(async move {
            let mut poll = tokio::time::interval(POLL_EVERY);
            poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            poll.tick().await;
            loop {
                let asked = tokio::select! {
                    _ = poll.tick() => false,
                    () = next_hangup(&mut hangup) => true,
                };
                // Reading files blocks: not on the runtime's threads.
                let (task_files, last) = (files.clone(), loaded.clone());
                let outcome = tokio::task::spawn_blocking(move || {
                    // Taken before the files are read: a change while they
                    // are read is seen at the next look.
                    let now = Stamp::of(&task_files);
                    if now == last && !asked {
                        return (now, None);
                    }
                    let result = load(&task_files);
                    (now, Some(result))
                })
                .await;
                let Ok((now, tried)) = outcome else { continue };
                loaded = now;
                match tried {
                    None => {}
                    Some(Ok(key)) => {
                        current.set(key);
                        tracing::info!(
                            cert = %files.cert.display(),
                            key = %files.key.display(),
                            "TLS certificate reloaded: new connections get the new one"
                        );
                    }
                    Some(Err(error)) => tracing::warn!(
                        %error,
                        "TLS certificate not reloaded: the one in use keeps serving until the files load"
                    ),
                }
            }
        })
    }
}

/// What changes when a file is rewritten or replaced: its modification
/// time, size, and (a new file renamed over it, a symbolic link pointed
/// elsewhere, as certbot does) its inode. `None` for a file that cannot be
/// looked at (being replaced, removed).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stamp {
    cert: Option<FileStamp>,
    key: Option<FileStamp>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: (u64, u64),
}

impl Stamp {
    fn of(files: &TlsFiles) -> Stamp {
        Stamp {
            cert: FileStamp::of(&files.cert),
            key: FileStamp::of(&files.key),
        }
    }
}

impl FileStamp {
    fn of(file: &Path) -> Option<FileStamp> {
        // Follows symbolic links: a link re-pointed at a new file is a change.
        let meta = std::fs::metadata(file).ok()?;
        #[cfg(unix)]
        let inode = {
            use std::os::unix::fs::MetadataExt as _;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let inode = (0, 0);
        Some(FileStamp {
            modified: meta.modified().ok(),
            len: meta.len(),
            inode,
        })
    }
}

#[cfg(unix)]
type Hangups = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangups = ();

#[cfg(unix)]
fn hangups() -> Hangups {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::hangup()) {
        Ok(signal) => Some(signal),
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGHUP: the TLS files are reloaded only when they change");
            None
        }
    }
}

#[cfg(not(unix))]
fn hangups() -> Hangups {}

#[cfg(unix)]
async fn next_hangup(hangups: &mut Hangups) {
    match hangups {
        Some(signal) => {
            if signal.recv().await.is_none() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending::<()>().await,
    }
}

#[cfg(not(unix))]
async fn next_hangup(_: &mut Hangups) {
    std::future::pending::<()>().await;
}

/// The answer to a plain HTTP request on the HTTPS port, before the
/// connection is closed: a person who typed `http://` reads what to do.
pub(crate) const PLAIN_HTTP_ON_HTTPS: &[u8] = b"HTTP/1.1 400 Bad Request\r\n\
content-type: text/plain; charset=utf-8\r\n\
connection: close\r\n\
content-length: 69\r\n\
\r\n\
This port serves HTTPS: open the same address with https:// instead.\n";

/// The largest piece of decrypted input handed over at once (a TLS
/// record's most plaintext).
const READ_PIECE: usize = 16 * 1024;

/// A TLS connection as hyper sees it.
///
/// On plain TCP the stream handlers learn that a client left by peeking
/// at the socket (`shared_socket.rs`). Under TLS a peek at the TCP socket
/// says nothing sound: a client that closes properly first sends a
/// `close_notify` alert, which is encrypted record bytes like any request,
/// so the peek sees data and never the end of input behind it. The end of
/// input can only be seen through the TLS stream's read side, which hyper
/// leaves alone while it writes an answer (half-close is allowed). So the
/// read side is driven by a task of its own, always: it reads decrypted
/// input one piece at a time into a channel of one place that hyper reads
/// from (back-pressure as before: a client sending ahead fills one piece,
/// then waits), and at the end of input or a failed read it tells the
/// connection's [`ClientGone`] — a `close_notify`, a FIN without one, or
/// a reset are all seen, whether or not hyper is reading. Input sent ahead
/// (a pipelined request) holds that news back until hyper takes it, as
/// unread bytes do on plain TCP. Writes go straight to the TLS stream.
/// The task ends with the connection: when hyper drops this, the channel
/// closes and the task lets go of the read side.
pub(crate) struct TlsSocket {
    incoming: mpsc::Receiver<io::Result<Vec<u8>>>,
    /// A piece received and not yet all handed to hyper.
    piece: Vec<u8>,
    taken: usize,
    /// The end of input (or a failure) was handed over.
    ended: bool,
    write: WriteHalf<TlsStream<TcpStream>>,
    gone: watch::Receiver<bool>,
}

impl TlsSocket {
    /// Starts the read side's task for `stream`, a completed handshake.
    pub(crate) fn new(stream: TlsStream<TcpStream>) -> TlsSocket {
        let (read, write) = tokio::io::split(stream);
        let (pieces, incoming) = mpsc::channel(1);
        let (left, gone) = watch::channel(false);
        tokio::spawn(read_side(read, pieces, left));
        TlsSocket {
            incoming,
            piece: Vec::new(),
            taken: 0,
            ended: false,
            write,
            gone,
        }
    }

    /// Waits for the first bytes of a request; false when the connection
    /// ended (or failed) before any.
    pub(crate) async fn first_bytes(&mut self) -> bool {
        match self.incoming.recv().await {
            Some(Ok(piece)) => {
                self.piece = piece;
                self.taken = 0;
                true
            }
            Some(Err(_)) | None => {
                self.ended = true;
                false
            }
        }
    }

    /// What the connection's requests are told through.
    pub(crate) fn client_gone(&self) -> ClientGone {
        let gone = self.gone.clone();
        ClientGone::new(move || -> GoneFuture {
            let mut gone = gone.clone();
            Box::pin(async move {
                // An error: the read side's task is over, so is the connection.
                let _ = gone.wait_for(|gone| *gone).await;
            })
        })
    }
}

/// The read side's task (see [`TlsSocket`]).
async fn read_side(
    mut read: ReadHalf<TlsStream<TcpStream>>,
    pieces: mpsc::Sender<io::Result<Vec<u8>>>,
    left: watch::Sender<bool>,
) {
    let mut buf = vec![0u8; READ_PIECE];
    loop {
        let read = tokio::select! {
            read = read.read(&mut buf) => read,
            // hyper is done with the connection.
            () = pieces.closed() => return,
        };
        match read {
            Ok(0) => {
                left.send_replace(true);
                // Dropping the sender is the end of input for hyper.
                return;
            }
            Ok(n) => {
                let piece = buf.get(..n).unwrap_or_default().to_vec();
                if pieces.send(Ok(piece)).await.is_err() {
                    return;
                }
            }
            Err(error) => {
                left.send_replace(true);
                let _ = pieces.send(Err(error)).await;
                return;
            }
        }
    }
}

impl AsyncRead for TlsSocket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if let Some(rest) = this.piece.get(this.taken..).filter(|rest| !rest.is_empty()) {
                let n = rest.len().min(buf.remaining());
                buf.put_slice(rest.get(..n).unwrap_or_default());
                this.taken += n;
                return Poll::Ready(Ok(()));
            }
            if this.ended {
                return Poll::Ready(Ok(()));
            }
            match ready!(this.incoming.poll_recv(cx)) {
                Some(Ok(piece)) => {
                    this.piece = piece;
                    this.taken = 0;
                }
                Some(Err(error)) => {
                    this.ended = true;
                    return Poll::Ready(Err(error));
                }
                None => {
                    this.ended = true;
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }
}

impl AsyncWrite for TlsSocket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().write).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().write).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.write.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().write).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // `close_notify`, then the TCP write side.
        Pin::new(&mut self.get_mut().write).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::PLAIN_HTTP_ON_HTTPS;

    #[test]
    fn the_answer_to_plain_http_declares_its_length() {
        let answer = std::str::from_utf8(PLAIN_HTTP_ON_HTTPS).unwrap_or_default();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_default();
        assert!(head.starts_with("HTTP/1.1 400 "), "{head}");
        let length = format!("content-length: {}", body.len());
        assert!(head.lines().any(|line| line == length), "{head}");
        assert!(body.contains("https://"), "{body}");
    }
}
