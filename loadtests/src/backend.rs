//! The store backends `run` can measure planshare with (`fs`, `redis`, `s3`,
//! `memory`): their names, the environment that selects one in a
//! `planshare-server` child, and the preparation an S3 server needs (a fresh
//! bucket, created with one unsigned `PUT`).

use crate::client::{Conn, Reply};
use anyhow::{Context as _, bail};
use bytes::Bytes;
use hyper::header::{AUTHORIZATION, HeaderName, HeaderValue};
use hyper::{Method, StatusCode, Uri};
use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

/// Where the `redis` store writes unless told otherwise: database 15 of the
/// local Redis, away from the default database 0.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379/15";

/// How to start a local S3 server, for the message when none is configured.
pub const MOTO_HINT: &str = "~/.cache/planshare/venv/bin/moto_server -H 127.0.0.1 -p 5055";

/// A planshare store backend (`PLANSHARE_STORE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Store {
    /// One file per paste in a temporary data directory (durable as the
    /// server's `store.fs.sync` says: group commit unless told otherwise).
    Fs,
    /// One key per paste in Redis.
    Redis,
    /// One object per paste in an S3-compatible server.
    S3,
    /// Pastes in the server's memory.
    Memory,
}

impl Store {
    /// Every store, in the order of the documentation.
    pub const ALL: [Self; 4] = [Self::Fs, Self::Redis, Self::S3, Self::Memory];

    /// The name `PLANSHARE_STORE` and `--stores` use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fs => "fs",
            Self::Redis => "redis",
            Self::S3 => "s3",
            Self::Memory => "memory",
        }
    }
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Store {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        Self::ALL
            .into_iter()
            .find(|store| store.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown store `{s}`: expected fs, redis, s3 or memory"))
    }
}

/// Fails on an empty list or a store named twice.
pub fn check_stores(stores: &[Store]) -> anyhow::Result<()> {
    if stores.is_empty() {
        bail!("--stores needs at least one store (fs, redis, s3 or memory)");
    }
    for (i, store) in stores.iter().enumerate() {
        if stores[..i].contains(store) {
            bail!("--stores names `{store}` twice");
        }
    }
    Ok(())
}

/// One store with the settings its server is started with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreConfig {
    /// The fs store (its data directory is set by whoever starts the server).
    Fs,
    /// The memory store.
    Memory,
    /// The Redis store.
    Redis {
        /// `redis://host:port/db`.
        url: String,
        /// `PLANSHARE_TTL_SECS`, so that what a run leaves in Redis expires.
        ttl_secs: u64,
    },
    /// The S3 store.
    S3 {
        /// `http://host:port` of the S3-compatible server.
        endpoint: String,
        /// The bucket (must exist when the server starts).
        bucket: String,
        /// Object key prefix.
        prefix: String,
        /// Pass `AWS_ACCESS_KEY_ID=test` and `AWS_SECRET_ACCESS_KEY=test`
        /// (for moto, when the caller's environment has no credentials).
        dummy_credentials: bool,
    },
}

impl StoreConfig {
    /// Which store this is.
    pub fn store(&self) -> Store {
        match self {
            Self::Fs => Store::Fs,
            Self::Memory => Store::Memory,
            Self::Redis { .. } => Store::Redis,
            Self::S3 { .. } => Store::S3,
        }
    }

    /// The variables that select and configure this store in a
    /// `planshare-server` child (on top of host, port and data directory).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![("PLANSHARE_STORE", self.store().name().to_owned())];
        match self {
            Self::Fs | Self::Memory => {}
            Self::Redis { url, ttl_secs } => {
                env.push(("PLANSHARE_REDIS_URL", url.clone()));
                env.push(("PLANSHARE_TTL_SECS", ttl_secs.to_string()));
            }
            Self::S3 {
                endpoint,
                bucket,
                prefix,
                dummy_credentials,
            } => {
                env.push(("PLANSHARE_S3_ENDPOINT", endpoint.clone()));
                env.push(("PLANSHARE_S3_BUCKET", bucket.clone()));
                env.push(("PLANSHARE_S3_PREFIX", prefix.clone()));
                if *dummy_credentials {
                    env.push(("AWS_ACCESS_KEY_ID", "test".to_owned()));
                    env.push(("AWS_SECRET_ACCESS_KEY", "test".to_owned()));
                }
            }
        }
        env
    }

    /// What a finished run leaves in this store and how to free it now, for
    /// stores that keep the run's pastes after it (Redis: until they
    /// expire; a `--stores fs,redis` run stores ~20 GB there, and a second
    /// run or test before they expire can exhaust a small machine's memory).
    pub fn leftovers(&self) -> Option<String> {
        match self {
            Self::Redis { url, ttl_secs } => Some(format!(
                "the run's pastes stay in {} for up to {ttl_secs} s; if that database is the \
                 run's own, free them now with `redis-cli -u {} FLUSHDB`",
                redacted(url),
                redacted(url)
            )),
            Self::Fs | Self::Memory | Self::S3 { .. } => None,
        }
    }

    /// A one-line description for reports (passwords in URLs redacted).
    pub fn describe(&self) -> String {
        match self {
            Self::Fs => "temporary data directory (removed afterwards)".to_owned(),
            Self::Memory => "server memory".to_owned(),
            Self::Redis { url, ttl_secs } => {
                format!("{} (pastes expire after {ttl_secs} s)", redacted(url))
            }
            Self::S3 {
                endpoint,
                bucket,
                prefix,
                ..
            } => format!("{} bucket `{bucket}` prefix `{prefix}`", redacted(endpoint)),
        }
    }
}

/// `url` with the password of its user information, if any, replaced by
/// `<redacted>` (`redis://user:pw@host` → `redis://user:<redacted>@host`).
pub fn redacted(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[scheme_end..];
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_len];
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    let user = authority[..at].split(':').next().unwrap_or_default();
    if !authority[..at].contains(':') {
        return url.to_owned();
    }
    format!(
        "{}{user}:<redacted>{}",
        &url[..scheme_end],
        &url[scheme_end + at..]
    )
}

/// A bucket name of its own for a run: `planshare-loadtest-<stamp>-<hex>`,
/// lower case (S3 bucket names allow `a-z`, `0-9` and `-`, 3–63 long).
pub fn run_bucket_name(stamp: &str, salt: u16) -> String {
    let stamp: String = stamp
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .take(24)
        .collect();
    format!("planshare-loadtest-{stamp}-{salt:04x}")
}

/// Host and port of a plain-HTTP endpoint such as `http://127.0.0.1:5055`.
pub fn http_endpoint(endpoint: &str) -> anyhow::Result<(String, u16)> {
    let uri: Uri = endpoint
        .trim()
        .parse()
        .with_context(|| format!("S3 endpoint `{endpoint}` is not a URL"))?;
    if uri.scheme_str() != Some("http") {
        bail!(
            "S3 endpoint `{endpoint}`: only http:// endpoints can be prepared by the runner \
             (create the bucket yourself and pass --s3-bucket)"
        );
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        bail!("S3 endpoint `{endpoint}` must be `http://host:port`, without a path");
    }
    let host = uri
        .host()
        .with_context(|| format!("S3 endpoint `{endpoint}` has no host"))?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    Ok((host, uri.port_u16().unwrap_or(80)))
}

/// The socket address of a plain-HTTP endpoint.
async fn endpoint_addr(endpoint: &str) -> anyhow::Result<SocketAddr> {
    let (host, port) = http_endpoint(endpoint)?;
    tokio::net::lookup_host((host.as_str(), port))
        .await
        .with_context(|| format!("resolving the S3 endpoint {}", redacted(endpoint)))?
        .next()
        .with_context(|| format!("the S3 endpoint {} has no address", redacted(endpoint)))
}

/// `/<bucket>` followed by `rest` (already a valid path-and-query suffix).
fn bucket_uri(bucket: &str, rest: &str) -> anyhow::Result<Uri> {
    format!("/{}{rest}", percent_encode(bucket))
        .parse()
        .with_context(|| format!("bucket name `{bucket}` does not make a path"))
}

/// Percent-encodes everything but unreserved characters and `/`.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The object keys (`<Key>…</Key>`) in a `ListObjectsV2` answer.
pub fn listed_keys(xml: &str) -> Vec<String> {
    xml.split("<Key>")
        .skip(1)
        .filter_map(|part| part.split_once("</Key>").map(|(key, _)| key))
        .map(|key| {
            key.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&")
        })
        .collect()
}

/// One request on `conn`, connecting first when there is no connection, and
/// once more when a reused connection turns out to be closed (some test
/// servers, moto among them, close the connection after every answer).
async fn exchange(
    conn: &mut Option<Conn>,
    addr: SocketAddr,
    method: &Method,
    uri: &Uri,
    headers: &[(HeaderName, HeaderValue)],
) -> anyhow::Result<Reply> {
    let reused = conn.is_some();
    for attempt in 0..2 {
        let c = match conn.as_mut() {
            Some(c) => c,
            None => conn.insert(Conn::connect(addr).await?),
        };
        match c
            .request(method.clone(), uri.clone(), headers, Bytes::new())
            .await
        {
            Ok(reply) => return Ok(reply),
            Err(e) => {
                *conn = None;
                if !reused || attempt == 1 {
                    return Err(e);
                }
            }
        }
    }
    bail!("internal: no attempt made")
}

/// An `Authorization` header of SigV4's shape with `access_key_id` but no
/// valid signature. moto does not check signatures, but it answers anonymous
/// requests for objects with 403; with this header it treats them as the
/// account of `access_key_id` (the one the server wrote with). A server that
/// checks signatures refuses it, and [`remove_bucket`] fails.
pub fn unsigned_authorization(access_key_id: &str, date: &str) -> anyhow::Result<HeaderValue> {
    HeaderValue::from_str(&format!(
        "AWS4-HMAC-SHA256 Credential={access_key_id}/{date}/us-east-1/s3/aws4_request, \
         SignedHeaders=host, Signature=0"
    ))
    .context("the access key id does not fit in a header")
}

/// Empties `bucket` and removes it (the counterpart of [`create_bucket`],
/// for moto: see [`unsigned_authorization`]): lists up to 1000 keys, deletes
/// them one by one, and repeats until the listing is empty; then
/// `DELETE /<bucket>`. Gives up after `timeout`. Returns the number of
/// objects deleted.
pub async fn remove_bucket(
    endpoint: &str,
    bucket: &str,
    authorization: HeaderValue,
    timeout: Duration,
) -> anyhow::Result<u64> {
    let addr = endpoint_addr(endpoint).await?;
    let list = bucket_uri(bucket, "?list-type=2&max-keys=1000")?;
    let headers = [(AUTHORIZATION, authorization)];
    let work = async {
        let mut conn = None;
        let mut deleted = 0;
        loop {
            let reply = exchange(&mut conn, addr, &Method::GET, &list, &headers).await?;
            if reply.status != StatusCode::OK {
                bail!("listing bucket `{bucket}`: HTTP {}", reply.status);
            }
            let keys = listed_keys(&String::from_utf8_lossy(&reply.body));
            if keys.is_empty() {
                break;
            }
            for key in keys {
                let uri = bucket_uri(bucket, &format!("/{}", percent_encode(&key)))?;
                let reply = exchange(&mut conn, addr, &Method::DELETE, &uri, &headers).await?;
                if !reply.status.is_success() {
                    bail!("deleting `{key}` from `{bucket}`: HTTP {}", reply.status);
                }
                deleted += 1;
            }
        }
        let uri = bucket_uri(bucket, "")?;
        let reply = exchange(&mut conn, addr, &Method::DELETE, &uri, &headers).await?;
        if !reply.status.is_success() {
            bail!("deleting bucket `{bucket}`: HTTP {}", reply.status);
        }
        anyhow::Ok(deleted)
    };
    tokio::time::timeout(timeout, work)
        .await
        .with_context(|| format!("removing bucket `{bucket}`: not done within {timeout:?}"))?
}

/// Creates `bucket` on the S3-compatible server at `endpoint` with an
/// unsigned `PUT /<bucket>` (moto and other test servers accept it; AWS does
/// not). A bucket that already exists and is ours counts as created.
pub async fn create_bucket(endpoint: &str, bucket: &str) -> anyhow::Result<()> {
    let addr = endpoint_addr(endpoint).await?;
    let path = bucket_uri(bucket, "")?;
    let timeout = Duration::from_secs(10);
    let attempt = async {
        let mut conn = Conn::connect(addr).await?;
        conn.request(Method::PUT, path, &[], Bytes::new()).await
    };
    let reply = tokio::time::timeout(timeout, attempt)
        .await
        .with_context(|| format!("PUT {}/{bucket}: no answer within {timeout:?}", redacted(endpoint)))?
        .with_context(|| {
            format!(
                "creating bucket `{bucket}` on {}: is the S3 server running? To start one: {MOTO_HINT}",
                redacted(endpoint)
            )
        })?;
    let body = String::from_utf8_lossy(&reply.body[..reply.body.len().min(300)]).into_owned();
    if reply.status == StatusCode::OK
        || (reply.status == StatusCode::CONFLICT && body.contains("BucketAlreadyOwnedByYou"))
    {
        return Ok(());
    }
    bail!(
        "creating bucket `{bucket}` on {} with an unsigned PUT failed: HTTP {}: {body}\n\
         (a server that wants signed requests needs an existing bucket: pass --s3-bucket NAME)",
        redacted(endpoint),
        reply.status
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_names_round_trip() {
        for store in Store::ALL {
            assert_eq!(store.name().parse::<Store>(), Ok(store));
        }
        assert_eq!(" Redis ".parse::<Store>(), Ok(Store::Redis));
        assert!("postgres".parse::<Store>().is_err());
    }

    #[test]
    fn store_lists_are_checked() {
        assert!(check_stores(&[Store::Fs, Store::Redis, Store::S3]).is_ok());
        assert!(check_stores(&[]).is_err());
        assert!(check_stores(&[Store::Fs, Store::Redis, Store::Fs]).is_err());
    }

    #[test]
    fn env_selects_the_store() {
        let names = |config: &StoreConfig| {
            config
                .env()
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&StoreConfig::Fs), ["PLANSHARE_STORE=fs"]);
        assert_eq!(
            names(&StoreConfig::Redis {
                url: DEFAULT_REDIS_URL.to_owned(),
                ttl_secs: 60,
            }),
            [
                "PLANSHARE_STORE=redis",
                "PLANSHARE_REDIS_URL=redis://127.0.0.1:6379/15",
                "PLANSHARE_TTL_SECS=60",
            ]
        );
        let s3 = StoreConfig::S3 {
            endpoint: "http://127.0.0.1:5055".to_owned(),
            bucket: "b".to_owned(),
            prefix: "pastes/".to_owned(),
            dummy_credentials: true,
        };
        assert_eq!(s3.store(), Store::S3);
        assert_eq!(
            names(&s3),
            [
                "PLANSHARE_STORE=s3",
                "PLANSHARE_S3_ENDPOINT=http://127.0.0.1:5055",
                "PLANSHARE_S3_BUCKET=b",
                "PLANSHARE_S3_PREFIX=pastes/",
                "AWS_ACCESS_KEY_ID=test",
                "AWS_SECRET_ACCESS_KEY=test",
            ]
        );
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redacted("redis://:pw@cache:6379/1"),
            "redis://:<redacted>@cache:6379/1"
        );
        assert_eq!(
            redacted("redis://user:pw@cache:6379"),
            "redis://user:<redacted>@cache:6379"
        );
        assert_eq!(redacted("redis://user@cache"), "redis://user@cache");
        assert_eq!(redacted(DEFAULT_REDIS_URL), DEFAULT_REDIS_URL);
        assert_eq!(redacted("not a url"), "not a url");
        let described = StoreConfig::Redis {
            url: "redis://:s3cret@h/2".to_owned(),
            ttl_secs: 5,
        }
        .describe();
        assert!(!described.contains("s3cret"), "{described}");
    }

    #[test]
    fn only_redis_runs_leave_pastes_behind() {
        let redis = StoreConfig::Redis {
            url: "redis://:s3cret@h:6379/15".to_owned(),
            ttl_secs: 1200,
        };
        let advice = redis.leftovers().unwrap();
        assert!(advice.contains("1200 s"), "{advice}");
        assert!(advice.contains("FLUSHDB"), "{advice}");
        assert!(advice.contains("h:6379/15"), "{advice}");
        assert!(!advice.contains("s3cret"), "{advice}");
        assert_eq!(StoreConfig::Fs.leftovers(), None);
        assert_eq!(StoreConfig::Memory.leftovers(), None);
    }

    #[test]
    fn bucket_names_are_valid() {
        let name = run_bucket_name("20261130T223442Z", 0xab1);
        assert_eq!(name, "planshare-loadtest-20261130t223442z-0ab1");
        assert!((3..=63).contains(&name.len()));
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        );
    }

    #[test]
    fn endpoints_are_parsed() -> anyhow::Result<()> {
        assert_eq!(
            http_endpoint("http://127.0.0.1:5055")?,
            ("127.0.0.1".to_owned(), 5055)
        );
        assert_eq!(
            http_endpoint("http://localhost/")?,
            ("localhost".to_owned(), 80)
        );
        assert_eq!(
            http_endpoint("http://[::1]:9000")?,
            ("::1".to_owned(), 9000)
        );
        assert!(http_endpoint("https://s3.amazonaws.com").is_err());
        assert!(http_endpoint("http://127.0.0.1:5055/bucket").is_err());
        assert!(http_endpoint("127.0.0.1:5055").is_err());
        Ok(())
    }

    #[tokio::test]
    async fn buckets_are_created_with_a_put() -> anyhow::Result<()> {
        // The reference server answers a PUT with 200, as moto does.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(crate::reference::serve(listener, 10));
        create_bucket(&format!("http://{addr}"), "planshare-loadtest-x").await?;
        server.abort();
        let _ = server.await;

        // Nothing listening any more: the error says how to start moto.
        let error = create_bucket(&format!("http://{addr}"), "planshare-loadtest-x")
            .await
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default();
        assert!(error.contains("moto_server"), "{error}");
        Ok(())
    }

    #[test]
    fn listings_are_parsed() {
        let xml = "<?xml version=\"1.0\"?><ListBucketResult><Name>b</Name>\
                   <Contents><Key>pastes/t/AAAA</Key><Size>3</Size></Contents>\
                   <Contents><Key>pastes/t/a&amp;b</Key></Contents></ListBucketResult>";
        assert_eq!(listed_keys(xml), ["pastes/t/AAAA", "pastes/t/a&b"]);
        assert!(
            listed_keys("<ListBucketResult><KeyCount>0</KeyCount></ListBucketResult>").is_empty()
        );
        assert_eq!(percent_encode("pastes/t/a&b c"), "pastes/t/a%26b%20c");
    }

    #[tokio::test]
    async fn an_empty_bucket_is_removed() -> anyhow::Result<()> {
        // The reference server lists no keys and answers DELETE with 200.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(crate::reference::serve(listener, 10));
        let deleted = remove_bucket(
            &format!("http://{addr}"),
            "planshare-loadtest-x",
            unsigned_authorization("test", "20261130")?,
            Duration::from_secs(5),
        )
        .await?;
        assert_eq!(deleted, 0);
        server.abort();
        Ok(())
    }
}
