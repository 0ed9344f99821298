//! The sweep's HTML report in a real headless browser (Debian's `chromium`): no console
//! messages, no request leaves the page, the summary figures in the first screen, and no
//! sideways scrolling at a phone's width; screenshots land in `target/report-screenshots/` for
//! a person to look at. The checks are run on a page built to fail them first, so a probe that
//! sees nothing cannot pass for a clean report.
//!
//! Needs chromium (`XLA2TPU_CHROMIUM`, else `/usr/bin/chromium`); `.ci/run` installs it and
//! `scripts/test` then requires it (`XLA2TPU_REQUIRE_BROWSER=1`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "support/skip.rs"]
mod skip;

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("XLA2TPU_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if path.is_file() {
        return Some(path);
    }
    skip::skip("XLA2TPU_REQUIRE_BROWSER", &format!("{} not found (apt-get install chromium)", path.display()));
    None
}

/// One headless run on `url`. The flags keep Chromium's own services off this closed network;
/// the net log records every request, the page's and the browser's.
fn browse(chromium: &Path, dir: &Path, url: &str, extra: &[&str]) -> Visit {
    let profile = tempfile::tempdir_in(dir).expect("profile dir");
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let netlog = dir.join(format!("net-{}.json", RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--allow-file-access-from-files",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--log-net-log={}", netlog.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "chromium failed on {url}:\n{stderr}");
    let console = stderr.lines().filter(|l| l.contains(":CONSOLE")).map(str::to_string).collect();
    Visit { dom: String::from_utf8_lossy(&out.stdout).to_string(), console, requests: page_requests(&netlog) }
}

struct Visit {
    dom: String,
    /// Console messages (errors, uncaught exceptions, logs): a report has none.
    console: Vec<String>,
    /// URLs the page asked for (the browser's own requests have no initiator origin).
    requests: Vec<String>,
}

fn page_requests(netlog: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(netlog).unwrap_or_else(|e| panic!("{}: {e}", netlog.display()));
    // Chromium may stop before closing the JSON array.
    let log: Value = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", text.trim_end().trim_end_matches(','))))
        .expect("net log JSON");
    let start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].as_u64().expect("event type");
    log["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["type"].as_u64() == Some(start) && e["params"]["initiator"].as_str() != Some("not an origin"))
        .filter_map(|e| e["params"]["url"].as_str().map(str::to_string))
        .collect()
}

/// A page that frames `report` at `width`×`height` and writes, once loaded, where its summary
/// cards end, how wide the document is, its font size, its smallest text as drawn (an SVG's
/// text shrinks with the SVG) and the text drawn past the screen's right edge (in a box that
/// scrolls sideways, or clipped) into `<pre id=probe>`.
fn probe_page(dir: &Path, report: &str, sizes: &[(u32, u32)]) -> String {
    let frames: String = sizes
        .iter()
        .map(|(w, h)| format!("<iframe src=\"{report}\" style=\"width:{w}px;height:{h}px;border:0\"></iframe>"))
        .collect();
    let page = format!(
        r#"<!doctype html><html><body style="margin:0">{frames}<pre id="probe"></pre><script>
addEventListener("load", () => {{
  const out = [...document.querySelectorAll("iframe")].map(f => {{
    const d = f.contentDocument, w = f.contentWindow, cards = d.querySelector(".cards");
    const right = d.documentElement.clientWidth, texts = [];
    const walk = d.createTreeWalker(d.body, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {{
      if (!n.textContent.trim() || n.parentElement.closest("title, style")) continue;
      const range = d.createRange();
      range.selectNodeContents(n);
      // Text folded away in a closed <details> has no box.
      const boxes = [...range.getClientRects()].filter(r => r.width > 0 && r.height > 0);
      if (boxes.length) texts.push({{text: n.textContent.trim().slice(0, 40), boxes}});
    }}
    const smallest = texts.map(t => ({{text: t.text, px: Math.min(...t.boxes.map(b => b.height))}}))
                          .sort((a, b) => a.px - b.px)[0] || null;
    const offscreen = texts.filter(t => t.boxes.some(b => b.right > right + 1)).map(t => t.text);
    return {{width: w.innerWidth, height: w.innerHeight, cardsBottom: cards ? cards.getBoundingClientRect().bottom : null,
             scrollWidth: d.documentElement.scrollWidth, clientWidth: right,
             fontPx: parseFloat(w.getComputedStyle(d.body).fontSize), smallest,
             offscreen: offscreen.length, firstOffscreen: offscreen.slice(0, 3),
             text: d.body.innerText,
             wide: [...d.body.querySelectorAll("*")].filter(e => e.getBoundingClientRect().right > right + 1)
                     .slice(0, 3).map(e => e.tagName + (e.className ? "." + e.className : ""))}};
  }});
  document.getElementById("probe").textContent = JSON.stringify(out);
}});
</script></body></html>"#
    );
    let path = dir.join("probe.html");
    std::fs::write(&path, page).unwrap();
    format!("file://{}", path.display())
}

fn probe(dom: &str) -> Vec<Value> {
    let start = dom.find("<pre id=\"probe\">").expect("probe element") + "<pre id=\"probe\">".len();
    let end = start + dom[start..].find("</pre>").expect("probe end");
    serde_json::from_str(&dom[start..end].replace("&quot;", "\"")).unwrap_or_else(|e| panic!("probe: {e}: {dom}"))
}

const PHONE: (u32, u32) = (390, 844);
const LAPTOP: (u32, u32) = (1280, 800);

/// The smallest text a page may draw, in CSS pixels of its box's height (12px text draws
/// about 14px high): an SVG scaled down to a phone draws its 12px labels at 4px.
const MIN_TEXT_PX: f64 = 11.0;

/// What the probe saw of one report at each size (phone first), and every check's failures.
struct Checked {
    probes: Vec<Value>,
    bad: Vec<String>,
}

/// Every check on one report file; `bad` is empty when it passes.
fn check(chromium: &Path, dir: &Path, report: &Path) -> Checked {
    let mut bad = Vec::new();
    let url = format!("file://{}", report.display());
    let visit = browse(chromium, dir, &url, &["--dump-dom"]);
    bad.extend(visit.console.iter().map(|c| format!("console: {c}")));
    bad.extend(visit.requests.iter().map(|r| format!("request: {r}")));
    let name = report.file_name().unwrap().to_string_lossy().to_string();
    let probed = browse(chromium, dir, &probe_page(dir, &name, &[PHONE, LAPTOP]), &["--dump-dom"]);
    let probes = probe(&probed.dom);
    for (size, p) in [PHONE, LAPTOP].iter().zip(&probes) {
        let (w, h) = (p["width"].as_f64().unwrap(), p["height"].as_f64().unwrap());
        assert_eq!((w, h), (f64::from(size.0), f64::from(size.1)), "the frame has the size asked for");
        match p["cardsBottom"].as_f64() {
            Some(bottom) if bottom <= h => {}
            other => bad.push(format!("{w}x{h}: the summary figures end at {other:?}, below the first screen")),
        }
        // clientWidth: the width left beside a desktop scrollbar (a phone's overlays the page).
        if p["scrollWidth"].as_f64().unwrap() > p["clientWidth"].as_f64().unwrap() + 1.0 {
            bad.push(format!(
                "{w}x{h}: the page is {}px wide in {}px: it scrolls sideways (first too wide: {})",
                p["scrollWidth"], p["clientWidth"], p["wide"]
            ));
        }
        if p["fontPx"].as_f64().unwrap() < 14.0 {
            bad.push(format!("{w}x{h}: body text is {}px", p["fontPx"]));
        }
        if let Some(px) = p["smallest"]["px"].as_f64().filter(|px| *px < MIN_TEXT_PX) {
            bad.push(format!("{w}x{h}: text drawn {px:.1}px high: {}", p["smallest"]["text"]));
        }
        // A table in a box of its own that scrolls sideways shows a phone its first columns
        // only, and its rows as blanks as tall as the hidden columns' wrapped text.
        if p["offscreen"].as_u64().unwrap() > 0 {
            bad.push(format!(
                "{w}x{h}: text past the screen's right edge: {} ({} in all)",
                p["firstOffscreen"], p["offscreen"]
            ));
        }
    }
    Checked { probes, bad }
}

#[test]
fn the_checks_fail_a_page_built_to_fail_them() {
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        r#"<!doctype html><html><body style="font-size:11px"><h1 style="height:2000px">x</h1>
<div class="cards">42%</div><table style="width:1500px"><tr><td>wide</td></tr></table>
<div style="overflow-x:auto"><table><tr><td style="min-width:600px">a</td><td>clipped column</td></tr></table></div>
<svg viewBox="0 0 2000 40" width="100%"><text x="0" y="20" style="font:12px sans-serif">shrunk label</text></svg>
<img src="http://127.0.0.1:9/pixel.png"><script>console.error("broken")</script></body></html>"#,
    )
    .unwrap();
    let bad = check(&chromium, dir.path(), &page).bad.join("\n");
    for expected in [
        "console: ",
        "broken",
        "request: http://127.0.0.1:9/pixel.png",
        "below the first screen",
        "scrolls sideways",
        "body text is 11px",
        "390x844: text drawn",
        "shrunk label",
        "390x844: text past the screen's right edge",
        "clipped column",
    ] {
        assert!(bad.contains(expected), "{expected:?} not found in:\n{bad}");
    }
}

#[test]
fn the_sweep_report_reads_well_in_a_browser() {
    let Some(chromium) = chromium() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("sweep.html");
    let out = Command::new(env!("CARGO_BIN_EXE_xla2tpu"))
        .args(["sweep", "--top", "1000", "--executions"])
        .arg(root.join("corpus/exec"))
        .args(["--compare", "torch_xla-2.9", "--format", "html", "-o"])
        .arg(&report)
        .output()
        .expect("xla2tpu runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let checked = check(&chromium, dir.path(), &report);
    assert!(checked.bad.is_empty(), "the sweep report:\n{}", checked.bad.join("\n"));

    // For a person: what the first screen looks like on a phone and on a laptop.
    let shots = root.join("target/report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    for (name, (w, h)) in [("phone", PHONE), ("laptop", LAPTOP)] {
        let png = shots.join(format!("sweep-{name}.png"));
        let page = probe_page(dir.path(), "sweep.html", &[(w, h)]);
        browse(
            &chromium,
            dir.path(),
            &page,
            &[&format!("--screenshot={}", png.display()), &format!("--window-size={w},{h}")],
        );
        let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        assert!(size > 10_000, "{} is {size} bytes: nothing rendered", png.display());
    }
}

#[test]
fn the_advice_page_reads_well_in_a_browser() {
    let Some(chromium) = chromium() else { return };
    let Some(python) = skip::tracer_python() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("advice.html");
    let out = Command::new(env!("CARGO_BIN_EXE_xla2tpu"))
        .current_dir(dir.path())
        .env("XLA2TPU_CACHE_DIR", root.join("target/xla2tpu-test-cache"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["run", "--advise", "--advise-html"])
        .arg(&page)
        .arg("--")
        .arg(&python)
        .arg(root.join("corpus/advise/item_every_step/before.py"))
        .output()
        .expect("xla2tpu runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    // The per-step chart has a bar per step for the sync, and the fix is on the page.
    assert!(html.matches("<rect").count() >= 6 + 6, "a bar per step for syncs and for ops: {html}");
    assert!(html.contains("step 6: 1 host sync<"), "{html}");
    assert!(html.contains("running_loss += loss.detach()"), "{html}");
    let checked = check(&chromium, dir.path(), &page);
    assert!(checked.bad.is_empty(), "the advice page:\n{}", checked.bad.join("\n"));
    // What a person reads: code as code (no Markdown backticks), the program by its name (not
    // this machine's path), and a sync card that agrees with the sync finding below it.
    let text = checked.probes[0]["text"].as_str().unwrap();
    assert!(!text.contains('`'), "backticks on the page:\n{text}");
    assert!(!text.contains(&*root.to_string_lossy()), "an absolute path on the page:\n{text}");
    assert!(text.contains("What would slow before.py on TorchTPU") && text.contains("before.py:14"), "{text}");
    assert!(text.contains("1\nhost syncs per step"), "{text}");
    let shots = root.join("target/report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let png = shots.join("advice-phone.png");
    let probe = probe_page(dir.path(), "advice.html", &[PHONE]);
    browse(&chromium, dir.path(), &probe, &[&format!("--screenshot={}", png.display()), "--window-size=390,844"]);
    assert!(std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0) > 10_000, "nothing rendered");
}
