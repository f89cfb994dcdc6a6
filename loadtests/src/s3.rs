//! The S3 bucket of a run's own, through the AWS SDK: its name
//! ([`run_bucket_name`]), a client for the S3 server a run is given
//! ([`client`]), the bucket created before the
//! planshare servers start ([`create_bucket`]) and emptied and removed after
//! the run ([`remove_bucket`]).
//!
//! The client signs its requests with the credentials the planshare server
//! is started with (see [`crate::backend::StoreConfig::S3`]), addresses
//! buckets by path (`http://host:port/<bucket>/<key>`, as test servers such
//! as moto want) and asks for checksums only where S3 requires them.

use crate::backend::{DUMMY_CREDENTIAL, MOTO_HINT, redacted};
use anyhow::{Context as _, bail};
use aws_config::BehaviorVersion;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{
    Credentials, Region, RequestChecksumCalculation, ResponseChecksumValidation,
};
use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use std::time::Duration;

/// The region requests are signed for: the planshare server's default.
const REGION: &str = "us-east-1";

/// How long one attempt of a request may take (the SDK retries a failed
/// attempt twice).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long creating the bucket may take in all.
const CREATE_TIMEOUT: Duration = Duration::from_secs(10);

/// Keys listed and deleted per request (S3's maximum for both).
const BATCH: i32 = 1000;

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

/// A client for the S3-compatible server at `endpoint`
/// (`http://host:port`). With `dummy_credentials` it signs as the access
/// key `test` (what the planshare server is then given); otherwise with the
/// standard AWS credential chain of this environment, as the server does.
pub async fn client(endpoint: &str, dummy_credentials: bool) -> Client {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .endpoint_url(endpoint.trim());
    if dummy_credentials {
        loader = loader.credentials_provider(Credentials::new(
            DUMMY_CREDENTIAL,
            DUMMY_CREDENTIAL,
            None,
            None,
            "planshare-loadtest",
        ));
    }
    let sdk = loader.load().await;
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .operation_attempt_timeout(ATTEMPT_TIMEOUT)
        .build();
    Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk)
            .force_path_style(true)
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
            .timeout_config(timeouts)
            .build(),
    )
}

/// Whether an SDK error means the server was not reached at all.
fn unreachable<E, R>(error: &SdkError<E, R>) -> bool {
    matches!(
        error,
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_)
    )
}

/// Creates `bucket` with `client` (of the server at `endpoint`, named in the
/// errors). A bucket that already exists and is ours counts as created.
pub async fn create_bucket(client: &Client, endpoint: &str, bucket: &str) -> anyhow::Result<()> {
    let endpoint = redacted(endpoint);
    let created =
        tokio::time::timeout(CREATE_TIMEOUT, client.create_bucket().bucket(bucket).send())
            .await
            .with_context(|| {
                format!(
                    "creating bucket `{bucket}` on {endpoint}: no answer within {CREATE_TIMEOUT:?}"
                )
            })?;
    let error = match created {
        Ok(_) => return Ok(()),
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_bucket_already_owned_by_you()) =>
        {
            return Ok(());
        }
        Err(e) => e,
    };
    let hint = if unreachable(&error) {
        format!("is the S3 server running? To start one: {MOTO_HINT}")
    } else {
        "refused (where the runner may not create buckets, create one yourself and pass \
         --s3-bucket NAME)"
            .to_owned()
    };
    Err(anyhow::Error::new(error))
        .with_context(|| format!("creating bucket `{bucket}` on {endpoint}: {hint}"))
}

/// Empties `bucket` and removes it (the counterpart of [`create_bucket`]):
/// lists up to 1000 keys, deletes them in one request, and repeats until the
/// listing is empty; then deletes the bucket. Gives up after `timeout`.
/// Returns the number of objects deleted.
pub async fn remove_bucket(
    client: &Client,
    bucket: &str,
    timeout: Duration,
) -> anyhow::Result<u64> {
    let work = async {
        let mut deleted = 0;
        loop {
            let listed = client
                .list_objects_v2()
                .bucket(bucket)
                .max_keys(BATCH)
                .send()
                .await
                .with_context(|| format!("listing bucket `{bucket}`"))?;
            let keys = listed
                .contents()
                .iter()
                .filter_map(|object| object.key())
                .map(|key| ObjectIdentifier::builder().key(key).build())
                .collect::<Result<Vec<_>, _>>()
                .context("internal: an object identifier without its key")?;
            if keys.is_empty() {
                break;
            }
            let count = keys.len();
            let delete = Delete::builder()
                .set_objects(Some(keys))
                .quiet(true)
                .build()
                .context("internal: a delete request without objects")?;
            let answer = client
                .delete_objects()
                .bucket(bucket)
                .delete(delete)
                .send()
                .await
                .with_context(|| format!("deleting {count} objects from `{bucket}`"))?;
            if let Some(failed) = answer.errors().first() {
                bail!(
                    "deleting `{}` from `{bucket}`: {} {}",
                    failed.key().unwrap_or_default(),
                    failed.code().unwrap_or_default(),
                    failed.message().unwrap_or_default()
                );
            }
            deleted += count as u64;
        }
        client
            .delete_bucket()
            .bucket(bucket)
            .send()
            .await
            .with_context(|| format!("deleting bucket `{bucket}`"))?;
        anyhow::Ok(deleted)
    };
    tokio::time::timeout(timeout, work)
        .await
        .with_context(|| format!("removing bucket `{bucket}`: not done within {timeout:?}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[tokio::test]
    async fn an_unreachable_server_is_named_with_how_to_start_one() -> anyhow::Result<()> {
        // A port nothing listens on any more.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        drop(listener);
        let client = client(&endpoint, true).await;
        let error = create_bucket(&client, &endpoint, "planshare-loadtest-x")
            .await
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default();
        assert!(error.contains("moto_server"), "{error}");
        assert!(error.contains(&endpoint), "{error}");
        Ok(())
    }
}
