//! The page: one HTML file holding the viewer's style and script, the manifest and — for a
//! file that opens from disk — every buffer in base64; nothing is fetched from the network.
//! Served maps ([`super::serve`]) get the same page with the buffers left out, fetched as
//! binary from the server instead.

use std::io::Write;
use std::path::Path;

use base64::engine::general_purpose::STANDARD;
use base64::write::EncoderWriter;

use super::map::Map;

/// The page around the data: placeholders `{{TITLE}}`, `/*STYLE*/`, `<!--DATA-->` and
/// `/*SCRIPT*/`, in that order.
const PAGE: &str = include_str!("page/page.html");
const STYLE: &str = include_str!("page/page.css");
/// The viewer's script, in the order its parts depend on each other (renderer, data, view
/// state and panel, mouse and start-up), run as one strict function so nothing leaks into
/// the page's globals but the test hook `window.sgtsneView`.
const SCRIPT: [&str; 4] = [
    include_str!("page/render.js"),
    include_str!("page/data.js"),
    include_str!("page/viewer.js"),
    include_str!("page/interact.js"),
];

/// Writes the page of `map` to `out`: with `inline`, the buffers as base64 in the page
/// (streamed, so a 10M-point map is never a string in memory); without, the page fetches
/// them from `buffer/I`.
pub(super) fn write_page(map: &Map, inline: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let (head, rest) = split_at(PAGE, "/*STYLE*/");
    let (before_data, rest) = split_at(rest, "<!--DATA-->");
    let (before_script, tail) = split_at(rest, "/*SCRIPT*/");
    out.write_all(
        head.replace("{{TITLE}}", &escape_html(&map.manifest.title))
            .as_bytes(),
    )?;
    out.write_all(STYLE.as_bytes())?;
    out.write_all(before_data.as_bytes())?;
    write_data(map, inline, out)?;
    out.write_all(before_script.as_bytes())?;
    out.write_all(b"(() => {\n\"use strict\";\n")?;
    for part in SCRIPT {
        out.write_all(part.as_bytes())?;
    }
    out.write_all(b"})();\n")?;
    out.write_all(tail.as_bytes())
}

/// The manifest and, with `inline`, each buffer, as `<script>` elements the page reads.
fn write_data(map: &Map, inline: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let mut manifest = serde_json::to_value(&map.manifest).map_err(std::io::Error::other)?;
    manifest["inline"] = inline.into();
    // `</` cannot end the script element early once written `<\/` (still the same JSON).
    let json = manifest.to_string().replace("</", "<\\/");
    writeln!(
        out,
        "<script type=\"application/json\" id=\"sgtsne-manifest\">{json}</script>"
    )?;
    if !inline {
        return Ok(());
    }
    for (i, buffer) in map.buffers.iter().enumerate() {
        write!(
            out,
            "<script type=\"application/octet-stream\" id=\"sgtsne-buffer-{i}\">"
        )?;
        let mut b64 = EncoderWriter::new(&mut *out, &STANDARD);
        b64.write_all(buffer)?;
        b64.finish()?;
        drop(b64);
        out.write_all(b"</script>\n")?;
    }
    Ok(())
}

/// The text before and after the first `mark` (the whole text before it when it is absent,
/// which the tests rule out for the page compiled in).
fn split_at<'a>(text: &'a str, mark: &str) -> (&'a str, &'a str) {
    text.split_once(mark).unwrap_or((text, ""))
}

/// `text` safe inside HTML text.
fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The self-contained page of `map` as a string (for a notebook's HTML output).
pub fn to_html(map: &Map) -> String {
    let mut out = Vec::new();
    // Writing to memory cannot fail.
    let _ = write_page(map, true, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Writes the self-contained page of `map` to `path`, atomically: a failed write leaves
/// `path` as it was.
pub fn write_map(path: &Path, map: &Map) -> crate::Result<()> {
    crate::io::write_atomic(path, |w| write_page(map, true, w))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::Column;

    #[test]
    fn page_has_every_part() {
        for mark in ["{{TITLE}}", "/*STYLE*/", "<!--DATA-->", "/*SCRIPT*/"] {
            assert_eq!(PAGE.matches(mark).count(), 1, "{mark}");
        }
        let map = Map::new(
            &[0.0, 1.0, 2.0, 3.0],
            2,
            &[Column::numeric("a", vec![1.0, 2.0])],
            "<b>",
        )
        .unwrap();
        let html = to_html(&map);
        assert!(html.contains("<title>&lt;b&gt;</title>"));
        assert!(
            html.contains("id=\"sgtsne-buffer-1\">AACAPwAAAEA=</script>"),
            "{html}"
        );
        assert!(!html.contains("http://") && !html.contains("https://"));
    }
}
