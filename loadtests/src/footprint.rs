//! What a run measures besides the phases: the resident memory of each
//! server process ([`MemoryFigures`]) and the bytes a fresh fs store takes on
//! disk ([`DiskFigures`]), together its [`Footprint`].

use crate::backend::Store;
use crate::disk::DiskUsage;
use crate::phases::Server;
use crate::stats::ratio;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Resident memory of one server process during a run, in KiB.
#[derive(Debug, Clone)]
pub struct MemoryFigures {
    /// The server.
    pub server: Server,
    /// The payload size this process alone serves (a reference server, or a
    /// reference stand-in), `None` for a planshare server (every size).
    pub size: Option<usize>,
    /// `VmRSS` right after the process first answered `/readyz`.
    pub idle_kib: Option<u64>,
    /// `VmRSS` after every paste for the `fetch` scenarios was seeded.
    pub seeded_kib: Option<u64>,
    /// Highest `VmRSS` sampled during the phases, per concurrency.
    pub peak_kib: BTreeMap<usize, u64>,
    /// `VmHWM` at the end of the run: the peak since the process started.
    pub high_water_kib: Option<u64>,
}

impl MemoryFigures {
    /// The JSON form, as in the report's `memory`.
    pub fn to_json(&self) -> Value {
        json!({
            "server": self.server.name(),
            "store": self.server.store().map(Store::name),
            "size": self.size,
            "idle_kib": self.idle_kib,
            "after_seeding_kib": self.seeded_kib,
            "peak_kib": self.peak_kib.iter().map(|(c, kib)| json!({
                "concurrency": c,
                "kib": kib,
            })).collect::<Vec<_>>(),
            "high_water_mark_kib": self.high_water_kib,
        })
    }
}

/// Bytes on disk of a fresh fs store holding `pastes` pastes of `size`
/// base64 characters each.
#[derive(Debug, Clone)]
pub struct DiskFigures {
    /// Characters of `data` per paste.
    pub size: usize,
    /// Pastes created.
    pub pastes: usize,
    /// What the files under the data directory add up to.
    pub usage: DiskUsage,
}

impl DiskFigures {
    /// Base64 characters stored: `pastes × size`.
    pub fn base64_chars(&self) -> u64 {
        self.pastes as u64 * self.size as u64
    }

    /// File lengths ÷ base64 characters (1.00 = the text as sent; 0.75 = the
    /// bytes it decodes to).
    pub fn apparent_per_char(&self) -> Option<f64> {
        ratio(
            Some(self.usage.apparent_bytes as f64),
            Some(self.base64_chars() as f64),
        )
    }

    /// Allocated blocks ÷ base64 characters.
    pub fn allocated_per_char(&self) -> Option<f64> {
        ratio(
            Some(self.usage.allocated_bytes as f64),
            Some(self.base64_chars() as f64),
        )
    }

    /// The JSON form, as in the report's `disk`.
    pub fn to_json(&self) -> Value {
        json!({
            "size": self.size,
            "pastes": self.pastes,
            "files": self.usage.files,
            "base64_chars": self.base64_chars(),
            "apparent_bytes": self.usage.apparent_bytes,
            "allocated_bytes": self.usage.allocated_bytes,
            "apparent_per_base64_char": self.apparent_per_char(),
            "allocated_per_base64_char": self.allocated_per_char(),
        })
    }
}

/// What a run measured besides the phases: memory and bytes on disk.
#[derive(Debug, Clone, Default)]
pub struct Footprint {
    /// One entry per server process, in start order.
    pub memory: Vec<MemoryFigures>,
    /// One entry per payload size (empty when the fs store was not measured).
    pub disk: Vec<DiskFigures>,
}

/// A footprint for tests here and in the reports.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    /// fs at 32 and 128 connections (8, 10, 20, 50 MiB, high-water mark
    /// 50.8 MiB), a reference server for 8192 B measured idle only, and 200
    /// pastes of 8192 B on disk.
    pub fn two_concurrencies() -> Footprint {
        Footprint {
            memory: vec![
                MemoryFigures {
                    server: Server::Planshare(Store::Fs),
                    size: None,
                    idle_kib: Some(8 * 1024),
                    seeded_kib: Some(10 * 1024),
                    peak_kib: [(32, 20_480), (128, 51_200)].into_iter().collect(),
                    high_water_kib: Some(52_000),
                },
                MemoryFigures {
                    server: Server::Reference,
                    size: Some(8192),
                    idle_kib: Some(3 * 1024),
                    seeded_kib: None,
                    peak_kib: BTreeMap::new(),
                    high_water_kib: None,
                },
            ],
            disk: vec![DiskFigures {
                size: 8192,
                pastes: 200,
                usage: DiskUsage {
                    files: 200,
                    apparent_bytes: 200 * 6208,
                    allocated_bytes: 200 * 8192,
                },
            }],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(size: usize, pastes: usize, apparent: u64, allocated: u64) -> DiskFigures {
        DiskFigures {
            size,
            pastes,
            usage: DiskUsage {
                files: pastes as u64,
                apparent_bytes: apparent,
                allocated_bytes: allocated,
            },
        }
    }

    #[test]
    fn bytes_on_disk_per_base64_char() {
        let d = disk(8192, 200, 200 * 6208, 200 * 8192);
        assert_eq!(d.base64_chars(), 1_638_400);
        assert_eq!(d.apparent_per_char(), Some(0.7578125));
        assert_eq!(d.allocated_per_char(), Some(1.0));
        // No pastes, no ratio.
        let empty = disk(8192, 0, 0, 0);
        assert_eq!(empty.apparent_per_char(), None);
        assert_eq!(empty.allocated_per_char(), None);

        let json = d.to_json();
        assert_eq!(json["files"], 200);
        assert_eq!(json["base64_chars"], 1_638_400);
        assert_eq!(json["apparent_per_base64_char"], 0.7578125);
        assert_eq!(json["allocated_per_base64_char"], 1.0);
    }

    #[test]
    fn memory_as_json() {
        let m = MemoryFigures {
            server: Server::Planshare(Store::Redis),
            size: None,
            idle_kib: Some(8192),
            seeded_kib: None,
            peak_kib: [(32, 20_480), (128, 51_200)].into_iter().collect(),
            high_water_kib: Some(52_000),
        };
        let json = m.to_json();
        assert_eq!(json["server"], "planshare");
        assert_eq!(json["store"], "redis");
        assert_eq!(json["size"], Value::Null);
        assert_eq!(json["after_seeding_kib"], Value::Null);
        assert_eq!(json["peak_kib"][0]["concurrency"], 32);
        assert_eq!(json["peak_kib"][1]["kib"], 51_200);
        assert_eq!(json["high_water_mark_kib"], 52_000);
    }
}
