//! Property tests: round trips of the whole pipeline, tamper detection, and
//! the forgiving base64 decoder against a reference model of `atob`.
#![allow(clippy::unwrap_used)]

use ::base64::Engine as _;
use ::base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use ::base64::engine::{DecodePaddingMode, general_purpose};
use proptest::prelude::*;
use share_codec::{
    Annotation, AnnotationType, CodecError, ImageAttachment, Json, ShareKey, ShareLink,
    SharePayload, compress, decode_forgiving, decode_hash, decrypt, encode_base64url, encode_hash,
    encrypt_with, hash_url, parse_share_link, short_url,
};

const MAX: usize = share_codec::DEFAULT_MAX_INFLATED_BYTES;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

/// Any characters, with control characters, quotes, backslashes and
/// U+2028/2029 well represented.
fn text(max: usize) -> impl Strategy<Value = String> {
    let special = prop_oneof![
        Just('"'),
        Just('\\'),
        Just('/'),
        Just('\u{7f}'),
        Just('\u{2028}'),
        Just('\u{2029}'),
        (0u8..0x20).prop_map(char::from),
    ];
    let ch = prop_oneof![3 => any::<char>(), 1 => special, 2 => proptest::char::range('a', 'z')];
    proptest::collection::vec(ch, 0..max).prop_map(|chars| chars.into_iter().collect())
}

/// Plans up to ~64 KiB: a random piece repeated, so large inputs stay cheap.
fn plan() -> impl Strategy<Value = String> {
    prop_oneof![
        text(200),
        (text(64), 0usize..1024).prop_map(|(piece, n)| piece.repeat(n))
    ]
}

fn opt_text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(text(12))
}

fn image() -> impl Strategy<Value = ImageAttachment> {
    (text(20), text(10)).prop_map(|(path, name)| ImageAttachment { path, name })
}

fn kind() -> impl Strategy<Value = Option<AnnotationType>> {
    proptest::option::of(prop_oneof![
        Just(AnnotationType::Deletion),
        Just(AnnotationType::Comment),
        Just(AnnotationType::GlobalComment),
        Just(AnnotationType::Replacement),
        Just(AnnotationType::Insertion),
    ])
}

fn annotation() -> impl Strategy<Value = Annotation> {
    (
        (
            kind(),
            text(40),
            opt_text(),
            opt_text(),
            proptest::collection::vec(image(), 0..3),
        ),
        (
            any::<bool>(),
            opt_text(),
            opt_text(),
            opt_text(),
            any::<u64>(),
            text(8),
        ),
    )
        .prop_map(|((kind, original_text, text, author, images), rest)| {
            let (is_quick_label, quick_label_tip, diff_context, source, offset, id) = rest;
            Annotation {
                id,
                block_id: "block-1".into(),
                start_offset: offset,
                end_offset: offset / 2,
                kind,
                original_text,
                text,
                author,
                images,
                is_quick_label,
                quick_label_tip,
                diff_context,
                source,
                created_a: Some(offset),
            }
        })
}

fn payload() -> impl Strategy<Value = SharePayload> {
    (
        plan(),
        proptest::collection::vec(annotation(), 0..6),
        proptest::collection::vec(image(), 0..3),
        proptest::option::of(text(100)),
        any::<bool>(),
    )
        .prop_map(
            |(plan, annotations, global_attachments, html, render_html)| SharePayload {
                plan,
                annotations,
                global_attachments,
                html,
                render_html,
            },
        )
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

/// What a share can carry: the fields and normalisations of the payload and
/// its tuples (`docs/wire-format.md`, "Payload").
fn shared_form(payload: &SharePayload) -> SharePayload {
    let annotations = payload
        .annotations
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let global = a.kind == Some(AnnotationType::GlobalComment);
            let deletion = a.kind == Some(AnnotationType::Deletion);
            Annotation {
                id: format!("shared-{i}"),
                kind: a.kind,
                original_text: if global {
                    String::new()
                } else {
                    a.original_text.clone()
                },
                text: if deletion {
                    None
                } else {
                    non_empty(a.text.clone())
                },
                author: non_empty(a.author.clone()),
                images: a.images.clone(),
                is_quick_label: a.is_quick_label && a.kind == Some(AnnotationType::Comment),
                diff_context: if global {
                    None
                } else {
                    non_empty(a.diff_context.clone())
                },
                source: non_empty(a.source.clone()),
                ..Annotation::default()
            }
        })
        .collect();
    SharePayload {
        annotations,
        ..payload.clone()
    }
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn payloads_survive_the_hash_pipeline(payload in payload()) {
        let hash = encode_hash(&payload);
        let restored = decode_hash(&hash, MAX).unwrap();
        let expected = shared_form(&payload);
        prop_assert_eq!(&restored, &expected);
        // Re-sharing a restored payload writes the same JSON again.
        prop_assert_eq!(restored.to_json(), expected.to_json());
        // And the link around it parses back to the same data.
        let link = parse_share_link(&hash_url("https://share.example", &hash)).unwrap();
        prop_assert_eq!(link, ShareLink::Hash { data: hash, callback: None });
    }

    #[test]
    fn json_strings_parse_back_to_themselves(s in text(300)) {
        let json = Json::Str(&s).stringify();
        prop_assert!(!json.chars().any(|c| c < ' '), "raw control character in {:?}", json);
        let parsed: String = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(parsed, s);
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn encryption_round_trips(key in any::<[u8; 32]>(), iv in any::<[u8; 12]>(), plaintext in text(2000)) {
        let key = ShareKey::from_bytes(key);
        let data = encrypt_with(&key, &iv, &plaintext);
        prop_assert_eq!(decrypt(&data, &key.to_base64url()).unwrap(), plaintext);
    }

    #[test]
    fn any_flipped_byte_fails_authentication(
        key in any::<[u8; 32]>(),
        iv in any::<[u8; 12]>(),
        plaintext in text(300),
        position in any::<prop::sample::Index>(),
        mask in 1u8..=255,
    ) {
        let key = ShareKey::from_bytes(key);
        let data = encrypt_with(&key, &iv, &compress(&plaintext));
        let mut bytes = decode_forgiving(&data).unwrap();
        let i = position.index(bytes.len());
        bytes[i] ^= mask;
        let result = decrypt(&encode_base64url(&bytes), &key.to_base64url());
        prop_assert_eq!(result, Err(CodecError::DecryptFailed), "byte {} of {}", i, bytes.len());
    }

    #[test]
    fn short_links_parse_back(
        id in "[A-Za-z0-9]{6,16}",
        key in any::<[u8; 32]>(),
        api in prop_oneof![Just(share_codec::DEFAULT_PASTE_API.to_owned()), "https?://[a-z0-9.-]{1,20}(:[0-9]{1,5})?(/[a-z]{0,5})?"],
    ) {
        let key = ShareKey::from_bytes(key);
        let url = short_url("https://share.example/sub", &id, &key, &api);
        let expected_api = (api != share_codec::DEFAULT_PASTE_API).then(|| api.clone());
        prop_assert_eq!(parse_share_link(&url).unwrap(), ShareLink::Short {
            base: "https://share.example/sub".into(),
            id: id.clone(),
            key: Some(key.to_base64url()),
            paste_api: expected_api.clone(),
        });
        // Import Review reads the same link the same way.
        let imported = share_codec::parse_import_url(&url).unwrap();
        let ShareLink::Short { key: k, paste_api, .. } = imported else { panic!("not short") };
        prop_assert_eq!((k, paste_api), (Some(key.to_base64url()), expected_api));
    }
}

/// A direct model of WHATWG forgiving-base64 decode, after upstream's
/// `-`→`+`, `_`→`/` mapping, using the `base64` crate for the bit work.
fn atob_model(input: &str) -> Option<Vec<u8>> {
    let mapped: String = input
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    let mut data: String = mapped
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' '))
        .collect();
    if data.len().is_multiple_of(4) {
        if data.ends_with("==") {
            data.truncate(data.len() - 2);
        } else if data.ends_with('=') {
            data.truncate(data.len() - 1);
        }
    }
    if data.len() % 4 == 1 {
        return None;
    }
    if !data
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/')
    {
        return None;
    }
    let lenient = GeneralPurpose::new(
        &::base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireNone),
    );
    Some(lenient.decode(&data).unwrap())
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn forgiving_base64_matches_the_atob_model(input in "[A-Za-z0-9+/_=\\- \t\n\r\u{c}!.é]{0,24}") {
        prop_assert_eq!(decode_forgiving(&input).ok(), atob_model(&input));
    }

    #[test]
    fn base64_of_bytes_decodes_in_every_spelling(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let url = encode_base64url(&bytes);
        prop_assert_eq!(decode_forgiving(&url).unwrap(), bytes.clone());
        let standard = general_purpose::STANDARD.encode(&bytes);
        prop_assert_eq!(decode_forgiving(&standard).unwrap(), bytes.clone());
        let spaced: String = standard.chars().flat_map(|c| [c, '\n']).collect();
        prop_assert_eq!(decode_forgiving(&spaced).unwrap(), bytes);
    }
}
