//! The page in a real browser: headless Chromium (Debian's `chromium`, installed here as
//! root) driven by playwright-core (from `web/package-lock.json`, under `target/tools/web`)
//! through `web/test/browser.test.mjs`, against `queens` servers started here: the main one
//! (`--max-n 24`), one with a single search slot, one with tokens (the test file starts two
//! more itself: one it kills, one whose `--cors-origin` names a page of its own). Covers the
//! page loading, n = 8's 92 boards and 12 classes, the queen (0, 0) fixed leaving 4,
//! attacked lines on hover, INVALID_ARGUMENT, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED,
//! UNAUTHENTICATED and a server gone shown with their messages, Stop ending the search
//! within 1 s (the server's CPU from /proc), n = 14 streamed to its end and n = 16 for 3 s
//! with the JS heap under 32 MiB (read over the DevTools protocol), saving as it streams, CORS from a page of
//! another origin, and a screenshot of n = 8 that is not blank (kept as
//! `target/tmp/web-n8.png`).

use crate::common::{ServerProcess, queens_bin, token_server};
use crate::tools;

use std::process::Command;
use std::time::Duration;

#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn the_page_in_a_real_browser() {
    tools::apt_packages(&["chromium"]);
    let modules = tools::web_modules();
    let server = ServerProcess::start(&["--max-n", "24"]);
    let busy = ServerProcess::start(&["--max-searches", "1"]);
    let token = "browser-test-token-0123456789";
    let guarded = token_server("browser", token, &[]);
    let scratch = tools::scratch_dir().join(format!("browser-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("create the browser's scratch folder");
    let screenshot = tools::scratch_dir().join("web-n8.png");
    let url = |s: &ServerProcess| format!("http://{}", s.addr);
    let passed = tools::node_test(
        Command::new("node")
            .args(["--test", "test/browser.test.mjs"])
            .current_dir(tools::repo().join("web"))
            .env("QUEENS_WEB_MODULES", modules)
            .env("QUEENS_SCRATCH", &scratch)
            .env("TMPDIR", &scratch)
            .env("QUEENS_URL", url(&server))
            .env("QUEENS_PID", server.pid().to_string())
            .env("QUEENS_BUSY_URL", url(&busy))
            .env("QUEENS_TOKEN_URL", url(&guarded))
            .env("QUEENS_TOKEN", token)
            .env("QUEENS_BIN", queens_bin())
            .env("QUEENS_SCREENSHOT", &screenshot),
        Duration::from_secs(900),
    );
    let _ = std::fs::remove_dir_all(&scratch);
    eprintln!("browser tests: {passed} passed");
}
