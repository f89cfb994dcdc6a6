//! Times re-anchoring on a large repetitive plan with many annotations that
//! are not in it (issue 22, item 8: a 5 MB plan and 2 000 such annotations).
//!
//! ```sh
//! cargo run --release -p plan-doc --example reanchor_big -- [MB] [ANNOTATIONS] [novel|recombined]
//! ```
//!
//! `novel` annotations quote text that never occurs in the plan; `recombined`
//! ones are pieces of the plan's own text glued where they share three bytes
//! (every 4-byte piece of them occurs in the plan, the whole does not, so
//! each one has to be scanned for). Prints the plan's size,
//! the time taken, and how many annotations were found, not found, or not
//! searched.

// Printing the figures is this program's job.
#![allow(clippy::print_stdout)]

use std::time::Instant;

use plan_doc::{AnchorHow, reanchor};
use share_codec::{Annotation, AnnotationType};

const SECTION: &str = "## Step\n\nThe service **retries** failed writes with `backoff` and logs each attempt.\n\n- check the queue depth\n- alert on errors\n\n";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let megabytes: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(5);
    let count: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let recombined = args.get(2).is_some_and(|a| a == "recombined");

    let mut plan = String::from("# Plan\n\n");
    while plan.len() < megabytes * 1024 * 1024 {
        plan.push_str(SECTION);
    }
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let annotations: Vec<Annotation> = (0..count)
        .map(|i| {
            let original_text = if recombined {
                recombine(&mut rng)
            } else {
                format!("reviewer note {i}: this sentence was edited out")
            };
            Annotation {
                kind: Some(AnnotationType::Comment),
                original_text,
                text: Some(format!("comment {i}")),
                ..Annotation::default()
            }
        })
        .collect();

    let started = Instant::now();
    let result = reanchor(&plan, &annotations);
    let elapsed = started.elapsed();
    let count_how = |how: AnchorHow| {
        result
            .anchors
            .iter()
            .flatten()
            .filter(|a| a.how == how)
            .count()
    };
    let found = result.anchors.iter().flatten().filter(|a| a.found).count();
    println!(
        "plan {} bytes, {} blocks, {count} {} annotations: {:.3} s; found {found}, not found {}, not searched {}",
        plan.len(),
        result.blocks.len(),
        if recombined { "recombined" } else { "novel" },
        elapsed.as_secs_f64(),
        count_how(AnchorHow::NotFound),
        count_how(AnchorHow::NotSearched),
    );
}

/// The blocks of `SECTION` as the search reads them: their sources, and
/// their rendered texts.
const BLOCKS: [[&str; 4]; 2] = [
    [
        "Step",
        "The service **retries** failed writes with `backoff` and logs each attempt.",
        "check the queue depth",
        "alert on errors",
    ],
    [
        "Step",
        "The service retries failed writes with backoff and logs each attempt.",
        "check the queue depth",
        "alert on errors",
    ],
];

/// A text of 30 to 120 bytes that is not in the plan but whose every 4-byte
/// piece is in its whitespace-normalised text: runs of the section's block
/// texts (joined by spaces, as that text reads) glued where the last three
/// bytes of one occur elsewhere.
fn recombine(rng: &mut u64) -> String {
    let mut next = |n: usize| {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        usize::try_from(*rng % n as u64).unwrap_or(0)
    };
    let period = format!("{} ", BLOCKS[0].join(" "));
    let text = period.as_bytes();
    // The plan repeats the section, so three periods hold every piece of it
    // shorter than one period, in every form searched.
    let forms: Vec<String> = BLOCKS
        .iter()
        .flat_map(|blocks| [format!("{} ", blocks.join(" ")), blocks.concat()])
        .map(|form| form.repeat(3))
        .collect();
    loop {
        let mut at = next(text.len());
        let mut out: Vec<u8> = Vec::new();
        while out.len() < 30 + next(90) {
            if out.len() >= 3 && next(4) == 0 {
                let tail = &out[out.len() - 3..];
                let jumps: Vec<usize> = (0..text.len() - 3)
                    .filter(|&j| &text[j..j + 3] == tail && j + 3 != at)
                    .collect();
                if !jumps.is_empty() {
                    at = jumps[next(jumps.len())] + 3;
                }
            }
            out.push(text[at % text.len()]);
            at = (at + 1) % text.len();
        }
        if let Ok(needle) = String::from_utf8(out)
            && !forms.iter().any(|form| form.contains(needle.trim()))
        {
            return needle;
        }
    }
}
