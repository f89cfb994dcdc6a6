//! Embeds the web app: every file of `web/` except `index.html` gets a
//! content-hashed name (`app.<hash>.js`), `index.html` gets those names in
//! place of its `{{file}}` placeholders, and each output is stored raw,
//! gzip- and brotli-compressed. `$OUT_DIR/assets.rs` lists them for
//! `src/assets.rs`.

use std::error::Error;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// The modules whose functions nearly all run while a link opens (decode,
/// render, re-find and highlight), and the ports of plan-doc
/// (`plandoc-*.js`). Each is served with V8's compile hint
/// (`EAGER_HINT`, Chromium 136 and later; a plain comment to other
/// engines): their
/// functions are compiled on a background thread as the module streams in,
/// instead of one by one on the page's thread when first called. Measured
/// together with the in-page inflate (loadtests/JOURNAL.md, "Portal
/// (2026-12-06, night)"): ~15–25 ms less to the highlights. Not for the
/// app's loader and page modules (app.js, share-page.js, review-page.js,
/// annotating.js, sharing.js, page-common.js …) or highlight.js, most of
/// whose code a load never runs. Every name must be a file of `web/`.
const EAGER_MODULES: &[&str] = &[
    "codec.js",
    "highlighter.js",
    "marked.esm.js",
    "plan-view.js",
    "plandoc-anchor.js",
    "plandoc-blocks.js",
    "plandoc-export.js",
    "plandoc-html.js",
    "plandoc-refs.js",
    "plandoc-render.js",
    "plandoc-steps.js",
    "plandoc-text.js",
    "sanitize.js",
];
const EAGER_HINT: &str = "//# allFunctionsCalledOnLoad\n";

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo::rerun-if-changed=web");
    let web = Path::new("web");
    let out = PathBuf::from(std::env::var("OUT_DIR")?);

    let mut names: Vec<String> = std::fs::read_dir(web)?
        .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    names.sort();
    if let Some(missing) = EAGER_MODULES
        .iter()
        .find(|m| !names.iter().any(|n| n == *m))
    {
        return Err(format!("EAGER_MODULES names {missing}, which web/ does not have").into());
    }

    let mut table = String::from("&[\n");
    let mut index_html = None;
    // Files may name others as `{{file}}` (index.html its script and style,
    // the modules those they import): a file is hashed once the files it
    // names have their hashed names.
    let mut sources: Vec<(String, Vec<u8>)> = Vec::new();
    for name in &names {
        let mut bytes = std::fs::read(web.join(name))?;
        if EAGER_MODULES.contains(&name.as_str()) {
            bytes.splice(0..0, EAGER_HINT.bytes());
        }
        if name == "index.html" {
            index_html = Some(String::from_utf8(bytes)?);
        } else {
            sources.push((name.clone(), bytes));
        }
    }
    let mut hashed_names: Vec<(String, String)> = Vec::new();
    while !sources.is_empty() {
        let before = sources.len();
        let mut waiting = Vec::new();
        for (name, bytes) in sources {
            let Some(bytes) = resolve(&bytes, &names, &hashed_names) else {
                waiting.push((name, bytes));
                continue;
            };
            let hash = short_hash(&bytes);
            let (stem, ext) = name.rsplit_once('.').ok_or("asset without an extension")?;
            let hashed = format!("{stem}.{hash}.{ext}");
            write_variants(&out, &hashed, &bytes)?;
            writeln!(
                table,
                "    asset!(\"/assets/{hashed}\", \"{hashed}\", \"{}\", \"{hash}\", true),",
                content_type(ext)?
            )?;
            hashed_names.push((name, hashed));
        }
        if waiting.len() == before {
            return Err("web/ files name each other in a cycle or name a missing file".into());
        }
        sources = waiting;
    }
    let html = with_module_preloads(&index_html.ok_or("web/index.html is missing")?, web)?;
    let html = resolve(html.as_bytes(), &names, &hashed_names)
        .ok_or("web/index.html names a file that web/ does not have")?;
    let html = String::from_utf8(html)?;
    let hash = short_hash(html.as_bytes());
    write_variants(&out, "index.html", html.as_bytes())?;
    writeln!(
        table,
        "    asset!(\"/\", \"index.html\", \"text/html; charset=utf-8\", \"{hash}\", false),"
    )?;
    table.push(']');
    std::fs::write(out.join("assets.rs"), table)?;
    Ok(())
}

/// `html` with a `<link rel="modulepreload">` for every module its
/// `app.js` imports statically, directly or not, ahead of the script: the
/// browser then fetches them all at once instead of one level of imports
/// after another. Modules imported only by `import()` are left to load
/// when asked for. The app's script must block rendering (see
/// `web/index.html`).
fn with_module_preloads(html: &str, web: &Path) -> Result<String, Box<dyn Error>> {
    const SCRIPT: &str = r#"<script type="module" src="{{app.js}}" blocking="render"></script>"#;
    if !html.contains(SCRIPT) {
        return Err(format!("web/index.html must load the app as {SCRIPT}").into());
    }
    let mut seen: Vec<String> = Vec::new();
    let mut queue = vec!["app.js".to_owned()];
    while let Some(module) = queue.pop() {
        let source = std::fs::read_to_string(web.join(&module))?;
        for (at, _) in source.match_indices("from \"{{") {
            let rest = &source[at + "from \"{{".len()..];
            let Some(end) = rest.find("}}\"") else {
                continue;
            };
            let name = rest[..end].to_owned();
            if name != "app.js" && !seen.contains(&name) {
                seen.push(name.clone());
                queue.push(name);
            }
        }
    }
    seen.sort();
    let links: String = seen
        .iter()
        .map(|name| format!("<link rel=\"modulepreload\" href=\"{{{{{name}}}}}\">\n"))
        .collect();
    Ok(html.replace(SCRIPT, &format!("{links}{SCRIPT}")))
}

/// `bytes` with every `{{file}}` replaced by `/assets/<hashed name>`, or
/// `None` while a named file has no hashed name yet.
fn resolve(bytes: &[u8], names: &[String], hashed: &[(String, String)]) -> Option<Vec<u8>> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Some(bytes.to_vec());
    };
    let mut text = text.to_owned();
    for name in names {
        let marker = format!("{{{{{name}}}}}");
        if text.contains(&marker) {
            let (_, to) = hashed.iter().find(|(from, _)| from == name)?;
            text = text.replace(&marker, &format!("/assets/{to}"));
        }
    }
    // A marker naming no file of web/ never resolves.
    if text.contains("{{")
        && names
            .iter()
            .all(|n| !text.contains(&format!("{{{{{n}}}}}")))
    {
        let unknown = text.match_indices("{{").any(|(at, _)| {
            text[at + 2..]
                .split("}}")
                .next()
                .is_some_and(|inner| !inner.contains(char::is_whitespace) && inner.contains('.'))
        });
        if unknown {
            return None;
        }
    }
    Some(text.into_bytes())
}

/// The first 10 hex digits of the SHA-256 of `bytes`.
fn short_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .take(5)
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn content_type(ext: &str) -> Result<&'static str, Box<dyn Error>> {
    Ok(match ext {
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "txt" => "text/plain; charset=utf-8",
        other => return Err(format!("no content type for .{other} assets").into()),
    })
}

/// `name`, `name.gz` and `name.br` in `out`.
fn write_variants(out: &Path, name: &str, bytes: &[u8]) -> Result<(), Box<dyn Error>> {
    std::fs::write(out.join(name), bytes)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(bytes)?;
    std::fs::write(out.join(format!("{name}.gz")), gz.finish()?)?;
    let mut br = Vec::new();
    {
        let mut writer = brotli::CompressorWriter::new(&mut br, 4096, 11, 22);
        writer.write_all(bytes)?;
        writer.flush()?;
    }
    std::fs::write(out.join(format!("{name}.br")), br)?;
    Ok(())
}
