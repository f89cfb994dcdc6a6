//! The run's own S3 bucket against a real S3-compatible server (moto in CI;
//! see `scripts/test`): created, filled as a run fills it, then emptied and
//! removed with the objects counted.
//!
//! The server's endpoint comes from `PLANSHARE_TEST_S3_ENDPOINT`; without it
//! the test is skipped locally and fails in CI.

// The skip notice is printed outside the `#[test]` function.
#![allow(clippy::print_stderr)]

use aws_sdk_s3::primitives::ByteStream;
use loadtests::clock::UtcTime;
use loadtests::payload::Rng;
use loadtests::s3;
use std::time::Duration;
use tokio::task::JoinSet;

/// The S3 test server's endpoint, or `None` when the test should be skipped.
fn endpoint() -> Option<String> {
    match std::env::var("PLANSHARE_TEST_S3_ENDPOINT") {
        Ok(endpoint) if !endpoint.is_empty() => Some(endpoint),
        _ if std::env::var_os("CI").is_some() => {
            panic!("PLANSHARE_TEST_S3_ENDPOINT is not set: scripts/test starts an S3 server")
        }
        _ => {
            eprintln!("skipped: PLANSHARE_TEST_S3_ENDPOINT is not set");
            None
        }
    }
}

/// Whether the planshare server would be given the dummy credentials (as
/// `run` decides it).
fn dummy_credentials() -> bool {
    let has = |var: &str| std::env::var_os(var).is_some_and(|v| !v.is_empty());
    !has("AWS_ACCESS_KEY_ID") && !has("AWS_PROFILE")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_bucket_is_created_emptied_and_removed() -> anyhow::Result<()> {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let client = s3::client(&endpoint, dummy_credentials()).await;
    let salt = Rng::from_entropy(0x7e57).next_u64() as u16;
    let bucket = s3::run_bucket_name(&UtcTime::now().compact(), salt);
    s3::create_bucket(&client, &endpoint, &bucket).await?;
    // Creating it again is no error: it is ours.
    s3::create_bucket(&client, &endpoint, &bucket).await?;

    // More objects than one listing holds, and keys that need encoding.
    let mut keys: Vec<String> = (0..1001).map(|i| format!("pastes/t/{i:04}")).collect();
    keys.extend(["pastes/t/a&b c".to_owned(), "pastes/t/ü+%".to_owned()]);
    let mut puts = JoinSet::new();
    for chunk in keys.chunks(100) {
        let (client, bucket, chunk) = (client.clone(), bucket.clone(), chunk.to_vec());
        puts.spawn(async move {
            for key in chunk {
                client
                    .put_object()
                    .bucket(&bucket)
                    .key(&key)
                    .body(ByteStream::from_static(b"paste"))
                    .send()
                    .await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(put) = puts.join_next().await {
        put??;
    }

    let deleted = s3::remove_bucket(&client, &bucket, Duration::from_secs(60)).await?;
    assert_eq!(deleted, keys.len() as u64);
    assert!(
        client.head_bucket().bucket(&bucket).send().await.is_err(),
        "bucket `{bucket}` is still there"
    );

    // A bucket that is not there cannot be removed.
    let error = s3::remove_bucket(&client, &bucket, Duration::from_secs(20))
        .await
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    assert!(error.contains(&bucket), "{error}");
    Ok(())
}

#[tokio::test]
async fn a_refused_bucket_says_what_to_do() -> anyhow::Result<()> {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let client = s3::client(&endpoint, dummy_credentials()).await;
    // Too short for a bucket name: the server refuses it.
    let error = s3::create_bucket(&client, &endpoint, "x")
        .await
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    assert!(error.contains("--s3-bucket NAME"), "{error}");
    assert!(!error.contains("moto_server"), "{error}");
    Ok(())
}
