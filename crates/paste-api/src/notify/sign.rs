//! Webhook signatures by the Standard Webhooks scheme: each delivery
//! carries `webhook-id`, `webhook-timestamp` (Unix seconds) and
//! `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`
//! under the subscription's secret, shown once as `whsec_<base64>`.
//!
//! The catalog keeps no secret: a subscription's is derived from the
//! deployment's webhook root key (made once, kept in `notify_keys`) and the
//! subscription's tenant and id, so it can be made again at every delivery
//! and by every replica.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The name of the webhook root key in the catalog's `notify_keys`.
pub(crate) const ROOT_KEY: &str = "webhook-root";

/// A fresh root key, base64 (256 random bits).
pub(crate) fn fresh_root() -> Result<String, getrandom::Error> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key)?;
    Ok(STANDARD.encode(key))
}

/// The root key's bytes, from its stored base64.
pub(crate) fn root_bytes(stored: &str) -> Option<[u8; 32]> {
    STANDARD.decode(stored).ok()?.try_into().ok()
}

/// HMAC-SHA256 of the concatenated `parts` under `key`.
fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes keys of any length: `new_from_slice` cannot fail for it.
    let Ok(mut mac) = HmacSha256::new_from_slice(key) else {
        unreachable!("HMAC takes keys of any length")
    };
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// The signing secret of subscription `sub` of `tenant`.
pub(crate) fn secret_for(root: &[u8; 32], tenant: &str, sub: &str) -> [u8; 32] {
    hmac(
        root,
        &[
            b"planshare webhook secret\0",
            tenant.as_bytes(),
            b"\0",
            sub.as_bytes(),
        ],
    )
}

/// The secret as a subscriber is given it: `whsec_` and its base64.
pub(crate) fn secret_text(secret: &[u8; 32]) -> String {
    format!("whsec_{}", STANDARD.encode(secret))
}

/// The `webhook-signature` value of one attempt.
pub(crate) fn signature(secret: &[u8], msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    let timestamp = timestamp.to_string();
    let mac = hmac(
        secret,
        &[msg_id.as_bytes(), b".", timestamp.as_bytes(), b".", body],
    );
    format!("v1,{}", STANDARD.encode(mac))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification.
    #[test]
    fn the_specifications_example_signs_alike() {
        let secret = STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(
            signature(
                &secret,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1_614_265_330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn secrets_differ_by_subscription_and_tenant_and_are_stable() {
        let root = [7u8; 32];
        let a = secret_for(&root, "tnt_a", "sub_aaaaaaaaaaaaaaaa");
        assert_eq!(a, secret_for(&root, "tnt_a", "sub_aaaaaaaaaaaaaaaa"));
        assert_ne!(a, secret_for(&root, "tnt_b", "sub_aaaaaaaaaaaaaaaa"));
        assert_ne!(a, secret_for(&root, "tnt_a", "sub_bbbbbbbbbbbbbbbb"));
        assert_ne!(a, secret_for(&[8u8; 32], "tnt_a", "sub_aaaaaaaaaaaaaaaa"));
        assert!(secret_text(&a).starts_with("whsec_"));
        assert_eq!(root_bytes(&STANDARD.encode(root)), Some(root));
        assert_eq!(root_bytes("short"), None);
    }
}
