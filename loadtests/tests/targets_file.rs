//! The committed targets file (`loadtests/targets.toml`) parses, and states
//! the targets of issue 8.

use loadtests::backend::Store;
use loadtests::targets::{Bound, Metric, Targets};
use std::path::Path;

#[test]
fn the_committed_targets_file_states_issue_8() -> anyhow::Result<()> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("targets.toml");
    let Some(targets) = Targets::load(&path)? else {
        panic!("{} is missing", path.display());
    };
    let find =
        |metric: Metric, scenario: Option<&str>, store: Option<Store>, size: Option<usize>| {
            targets
                .targets
                .iter()
                .filter(|t| t.metric == metric && t.scenario == scenario && t.store == store)
                .filter(|t| match (size, &t.sizes) {
                    (Some(size), Some(sizes)) => sizes.contains(&size),
                    (None, None) => true,
                    _ => false,
                })
                .map(|t| t.bound)
                .collect::<Vec<_>>()
        };
    let fs = Some(Store::Fs);
    let redis = Some(Store::Redis);
    let (create, fetch) = (Some("create"), Some("fetch"));
    assert_eq!(
        find(Metric::Throughput, fetch, fs, Some(8192)),
        [Bound::Min(0.8)]
    );
    assert_eq!(find(Metric::P99, fetch, fs, Some(8192)), [Bound::Max(2.0)]);
    assert_eq!(
        find(Metric::Throughput, fetch, fs, Some(102_400)),
        [Bound::Min(0.6)]
    );
    assert_eq!(
        find(Metric::Throughput, create, fs, Some(8192)),
        [Bound::Min(0.3)]
    );
    assert_eq!(
        find(Metric::Throughput, create, fs, Some(102_400)),
        [Bound::Min(0.3)]
    );
    assert_eq!(
        find(Metric::Throughput, fetch, redis, None),
        [Bound::Min(0.6)]
    );
    assert_eq!(
        find(Metric::Throughput, create, redis, None),
        [Bound::Min(0.4)]
    );
    assert_eq!(
        find(Metric::DiskPerBase64Char, None, fs, None),
        [Bound::Max(0.76)]
    );
    assert_eq!(
        find(Metric::CpuPerRequest, fetch, fs, None),
        [Bound::Max(3.0)]
    );
    assert_eq!(
        find(Metric::CpuPerRequest, create, fs, None),
        [Bound::Max(6.0)]
    );
    assert_eq!(
        find(Metric::RssIdleMib, None, None, None),
        [Bound::Max(20.0)]
    );
    assert_eq!(
        find(Metric::RssPeakMib, None, None, None),
        [Bound::Max(100.0)]
    );
    assert_eq!(targets.targets.len(), 11);
    Ok(())
}
