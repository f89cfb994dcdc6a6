//! The upstream vectors of kind `export_annotations`
//! (`testdata/upstream-share-vectors.json`): the block model must equal
//! upstream's `parseMarkdownToBlocks` output and the export must equal
//! upstream's `exportAnnotations` byte for byte, whether the blocks come from
//! the vector, from our parser, or the annotations are re-anchored from their
//! text alone (as a shared link restores them).
#![allow(clippy::unwrap_used)]

use plan_doc::{Block, DEFAULT_SUBJECT, DEFAULT_TITLE, export_annotations, parse_blocks, reanchor};
use serde_json::Value;
use share_codec::{Annotation, ImageAttachment};

struct ExportVector {
    name: String,
    markdown: Option<String>,
    blocks: Option<Vec<Block>>,
    annotations: Vec<Annotation>,
    attachments: Vec<ImageAttachment>,
    output: String,
}

fn vectors() -> Vec<ExportVector> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/upstream-share-vectors.json"
    );
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let vectors: Vec<ExportVector> = all["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["kind"] == "export_annotations")
        .map(|v| {
            let input = &v["input"];
            let field = |name: &str| input.get(name).cloned();
            ExportVector {
                name: v["name"].as_str().unwrap().to_owned(),
                markdown: input["markdown"].as_str().map(str::to_owned),
                blocks: field("blocks").map(|b| serde_json::from_value(b).unwrap()),
                annotations: serde_json::from_value(input["annotations"].clone()).unwrap(),
                attachments: field("globalAttachments")
                    .map(|g| serde_json::from_value(g).unwrap())
                    .unwrap_or_default(),
                output: v["output"].as_str().unwrap().to_owned(),
            }
        })
        .collect();
    assert_eq!(vectors.len(), 2, "the public export_annotations vectors");
    vectors
}

fn export(blocks: &[Block], v: &ExportVector, annotations: &[Annotation]) -> String {
    export_annotations(
        blocks,
        annotations,
        &v.attachments,
        DEFAULT_TITLE,
        DEFAULT_SUBJECT,
    )
}

#[test]
fn export_with_the_vector_blocks_matches_byte_for_byte() {
    for v in vectors() {
        let blocks = v.blocks.clone().unwrap_or_default();
        assert_eq!(
            export(&blocks, &v, &v.annotations),
            v.output,
            "vector {}",
            v.name
        );
    }
}

#[test]
fn parsed_blocks_equal_the_vector_blocks() {
    for v in vectors() {
        let (Some(markdown), Some(expected)) = (&v.markdown, &v.blocks) else {
            continue;
        };
        assert_eq!(&parse_blocks(markdown), expected, "vector {}", v.name);
        // And the JSON upstream would print: same keys, same order, same values.
        let ours: Vec<OrderedObject> =
            serde_json::from_str(&serde_json::to_string(&parse_blocks(markdown)).unwrap()).unwrap();
        assert_eq!(ours, raw_blocks(&v.name), "vector {}", v.name);
    }
}

/// A JSON object as its (key, value) pairs in document order.
#[derive(Debug, PartialEq)]
struct OrderedObject(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for OrderedObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = OrderedObject;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<OrderedObject, A::Error> {
                let mut pairs = Vec::new();
                while let Some(pair) = map.next_entry()? {
                    pairs.push(pair);
                }
                Ok(OrderedObject(pairs))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// The vector's `input.blocks`, keys in file order.
fn raw_blocks(name: &str) -> Vec<OrderedObject> {
    #[derive(serde::Deserialize)]
    struct File {
        vectors: Vec<Vector>,
    }
    #[derive(serde::Deserialize)]
    struct Vector {
        kind: String,
        name: String,
        input: Input,
    }
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Input {
        WithBlocks { blocks: Vec<OrderedObject> },
        Other(serde::de::IgnoredAny),
    }
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/upstream-share-vectors.json"
    );
    let file: File = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    file.vectors
        .into_iter()
        .find(|v| v.kind == "export_annotations" && v.name == name)
        .and_then(|v| match v.input {
            Input::WithBlocks { blocks } => Some(blocks),
            Input::Other(_) => None,
        })
        .unwrap()
}

#[test]
fn export_with_parsed_blocks_matches_byte_for_byte() {
    for v in vectors() {
        let blocks = v.markdown.as_deref().map(parse_blocks).unwrap_or_default();
        assert_eq!(
            export(&blocks, &v, &v.annotations),
            v.output,
            "vector {}",
            v.name
        );
    }
}

#[test]
fn reanchoring_text_only_annotations_reproduces_the_export() {
    for v in vectors() {
        let Some(markdown) = &v.markdown else {
            continue;
        };
        // What a shared link restores: text only, no block ids or offsets.
        let restored: Vec<Annotation> = v
            .annotations
            .iter()
            .map(|a| Annotation {
                block_id: String::new(),
                start_offset: 0,
                end_offset: 0,
                ..a.clone()
            })
            .collect();
        let r = reanchor(markdown, &restored);
        assert_eq!(r.not_found().count(), 0, "vector {}", v.name);
        for (got, want) in r.annotations.iter().zip(&v.annotations) {
            if got.block_id.is_empty() {
                continue; // skipped: global or diff content
            }
            assert_eq!(
                (&got.block_id, got.start_offset),
                (&want.block_id, want.start_offset)
            );
        }
        assert_eq!(
            export(&r.blocks, &v, &r.annotations),
            v.output,
            "vector {}",
            v.name
        );
    }
}
