//! `planshare-portal sizes`: the embedded assets as a table.

use std::fmt::Write as _;

use portal::standalone::AssetSize;

/// One line per asset (raw, gzip and brotli bytes), then the JS + CSS a
/// browser downloads to run the app, and everything embedded.
pub fn table(sizes: &[AssetSize]) -> String {
    let mut sorted: Vec<&AssetSize> = sizes.iter().collect();
    sorted.sort_by_key(|s| s.path);
    let total = |label: &str, pick: &dyn Fn(&AssetSize) -> bool| {
        let picked: Vec<_> = sorted.iter().filter(|s| pick(s)).collect();
        (
            format!("total {label} ({} files)", picked.len()),
            picked.iter().map(|s| s.raw).sum::<usize>(),
            picked.iter().map(|s| s.gzip).sum::<usize>(),
            picked.iter().map(|s| s.brotli).sum::<usize>(),
        )
    };
    let totals = [
        total("JS + CSS", &AssetSize::is_js_or_css),
        total("embedded", &|_| true),
    ];
    let width = sorted
        .iter()
        .map(|s| s.path.len())
        .chain(totals.iter().map(|t| t.0.len()))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    let mut row = |name: &str,
                   raw: &dyn std::fmt::Display,
                   gzip: &dyn std::fmt::Display,
                   brotli: &dyn std::fmt::Display| {
        let _ = writeln!(out, "{name:<width$}  {raw:>9}  {gzip:>9}  {brotli:>9}");
    };
    row("asset", &"raw", &"gzip", &"brotli");
    for s in &sorted {
        row(s.path, &s.raw, &s.gzip, &s.brotli);
    }
    for (label, raw, gzip, brotli) in &totals {
        row(label, raw, gzip, brotli);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_each_asset_and_the_totals() {
        let sizes = [
            AssetSize {
                path: "/",
                content_type: "text/html; charset=utf-8",
                raw: 100,
                gzip: 60,
                brotli: 50,
            },
            AssetSize {
                path: "/assets/app.0123456789.js",
                content_type: "text/javascript; charset=utf-8",
                raw: 1000,
                gzip: 400,
                brotli: 350,
            },
            AssetSize {
                path: "/assets/app.0123456789.css",
                content_type: "text/css; charset=utf-8",
                raw: 500,
                gzip: 200,
                brotli: 150,
            },
        ];
        let table = table(&sizes);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 6, "{table}");
        assert!(lines[0].starts_with("asset") && lines[0].ends_with("brotli"));
        let numbers = |line: &str| -> Vec<usize> {
            line.split_whitespace()
                .rev()
                .take(3)
                .map(|n| n.parse().unwrap_or(usize::MAX))
                .collect()
        };
        assert!(lines[4].starts_with("total JS + CSS (2 files)"));
        assert_eq!(numbers(lines[4]), [500, 600, 1500]);
        assert!(lines[5].starts_with("total embedded (3 files)"));
        assert_eq!(numbers(lines[5]), [550, 660, 1600]);
    }
}
