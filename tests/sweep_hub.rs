//! The live Hub path against a local server on 127.0.0.1: paging, caching, retries and faults.
//! Every test bounds its time (short timeouts, few attempts) and contacts only loopback.
mod sweep_support;

use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use sweep_support::{Reply, Server, entries, page_of};
use xla2tpu::sweep::hub::{self, HubOptions, RetryPolicy, list_top};

fn opts(server: &Server, cache: &Path) -> HubOptions {
    HubOptions {
        endpoint: server.url(),
        token: None,
        basic_auth: None,
        offline: false,
        refresh: false,
        cache_dir: cache.join("hub"),
        retry: RetryPolicy { attempts: 4, base: Duration::from_millis(10), max_sleep: Duration::from_secs(2) },
        connect_timeout: Duration::from_secs(2),
        timeout: Duration::from_secs(5),
        max_body: xla2tpu::sweep::hub::MAX_BODY,
    }
}

fn cached_files(cache: &Path) -> Vec<String> {
    match std::fs::read_dir(cache.join("hub")) {
        Ok(dir) => dir.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn top_5000_takes_five_requests_then_none_from_cache() {
    let server = Server::start(|base, target, _| page_of(base, target, 6000, 1000));
    let tmp = tempfile::tempdir().unwrap();
    let o = opts(&server, tmp.path());

    let (list, stats) = list_top(&o, 5000, &ProgressBar::hidden()).unwrap();
    assert_eq!(list.models.len(), 5000);
    assert_eq!(list.models[0].id, "org/model-0");
    assert_eq!(list.models[4999].id, "org/model-4999");
    assert_eq!(list.models[0].model_type.as_deref(), Some("llama"));
    assert_eq!(stats.requests, 5, "1,000 per page: the top 5,000 is 5 requests");
    let first = server.requests.lock().unwrap()[0].target.clone();
    for field in [
        "sort=downloads",
        "limit=1000",
        "expand=config",
        "expand=downloads",
        "expand=library_name",
        "expand=pipeline_tag",
        "expand=tags",
    ] {
        assert!(first.contains(field), "{first} lacks {field}");
    }
    assert_eq!(cached_files(tmp.path()).len(), 5);

    let (again, stats) = list_top(&o, 5000, &ProgressBar::hidden()).unwrap();
    assert_eq!((stats.requests, stats.pages_cached), (0, 5), "a re-run costs no requests");
    assert_eq!(again.models, list.models);

    let refresh = HubOptions { refresh: true, ..o };
    let (_, stats) = list_top(&refresh, 5000, &ProgressBar::hidden()).unwrap();
    assert_eq!(stats.requests, 5, "--refresh bypasses the cache");
    assert_eq!(server.hits(), 10);
}

#[test]
fn small_top_asks_for_a_small_page() {
    let server = Server::start(|base, target, _| {
        let limit: usize = target.split('&').find_map(|kv| kv.strip_prefix("limit=")).unwrap().parse().unwrap();
        page_of(base, target, 5000, limit)
    });
    let tmp = tempfile::tempdir().unwrap();
    let (list, stats) = list_top(&opts(&server, tmp.path()), 30, &ProgressBar::hidden()).unwrap();
    assert_eq!((list.models.len(), stats.requests), (30, 1));
}

#[test]
fn honours_retry_after_on_429() {
    let server = Server::start(|base, target, n| {
        if target.contains("cursor=1") && n == 0 {
            Reply::Status { code: 429, retry_after: Some(1) }
        } else {
            page_of(base, target, 2500, 1000)
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (list, stats) = list_top(&opts(&server, tmp.path()), 2500, &ProgressBar::hidden()).unwrap();
    assert_eq!(list.models.len(), 2500);
    assert_eq!(stats.requests, 4);
    assert!(started.elapsed() >= Duration::from_millis(950), "slept for Retry-After");
}

#[test]
fn retries_a_500() {
    let server = Server::start(|base, target, n| {
        if n == 0 { Reply::Status { code: 500, retry_after: None } } else { page_of(base, target, 1500, 1000) }
    });
    let tmp = tempfile::tempdir().unwrap();
    let (list, stats) = list_top(&opts(&server, tmp.path()), 1500, &ProgressBar::hidden()).unwrap();
    assert_eq!((list.models.len(), stats.requests), (1500, 4));
}

#[test]
fn permanent_500_names_url_and_status_and_keeps_earlier_pages() {
    let server = Server::start(|base, target, _| {
        if target.contains("cursor=2") {
            Reply::Status { code: 500, retry_after: None }
        } else {
            page_of(base, target, 5000, 1000)
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let o = opts(&server, tmp.path());
    let err = format!("{:#}", list_top(&o, 5000, &ProgressBar::hidden()).unwrap_err());
    assert!(err.contains(&format!("{}/api/models?", server.url())) && err.contains("cursor=2"), "{err}");
    assert!(err.contains("500"), "{err}");
    assert!(err.contains("after 4 attempts"), "{err}");
    assert_eq!(cached_files(tmp.path()).len(), 2, "the two pages fetched before the failure stay cached");

    // Those pages now serve offline.
    let offline = HubOptions { offline: true, ..o };
    let before = server.hits();
    let (list, stats) = list_top(&offline, 2000, &ProgressBar::hidden()).unwrap();
    assert_eq!((list.models.len(), stats.requests, server.hits()), (2000, 0, before));
    let err = format!("{:#}", list_top(&offline, 5000, &ProgressBar::hidden()).unwrap_err());
    assert!(err.contains("HF_HUB_OFFLINE") && err.contains("cursor=2"), "{err}");
}

#[test]
fn offline_without_cache_is_an_error() {
    let server = Server::start(|base, target, _| page_of(base, target, 10, 10));
    let tmp = tempfile::tempdir().unwrap();
    let o = HubOptions { offline: true, ..opts(&server, tmp.path()) };
    let err = format!("{:#}", list_top(&o, 10, &ProgressBar::hidden()).unwrap_err());
    assert!(err.contains("not in the cache"), "{err}");
    assert_eq!(server.hits(), 0);
}

#[test]
fn a_read_timeout_is_retried() {
    let server = Server::start(|base, target, n| {
        let page = page_of(base, target, 100, 100);
        if n == 0 { Reply::Slow(Duration::from_secs(3), Box::new(page)) } else { page }
    });
    let tmp = tempfile::tempdir().unwrap();
    let o = HubOptions { timeout: Duration::from_millis(1000), ..opts(&server, tmp.path()) };
    let (list, stats) = list_top(&o, 100, &ProgressBar::hidden()).unwrap();
    assert_eq!((list.models.len(), stats.requests), (100, 2));
}

#[test]
fn a_permanent_timeout_fails_naming_the_url() {
    let server =
        Server::start(|base, target, _| Reply::Slow(Duration::from_secs(5), Box::new(page_of(base, target, 10, 10))));
    let tmp = tempfile::tempdir().unwrap();
    let mut o = HubOptions { timeout: Duration::from_millis(500), ..opts(&server, tmp.path()) };
    o.retry.attempts = 2;
    let started = Instant::now();
    let err = format!("{:#}", list_top(&o, 10, &ProgressBar::hidden()).unwrap_err());
    assert!(err.contains("timed out") && err.contains("/api/models?"), "{err}");
    assert!(started.elapsed() < Duration::from_millis(4500), "gave up before the server answered");
}

#[test]
fn a_truncated_body_is_retried() {
    let server = Server::start(|base, target, n| match page_of(base, target, 50, 50) {
        Reply::Page { body, .. } if n == 0 => Reply::Truncated(body),
        page => page,
    });
    let tmp = tempfile::tempdir().unwrap();
    let (list, stats) = list_top(&opts(&server, tmp.path()), 50, &ProgressBar::hidden()).unwrap();
    assert_eq!((list.models.len(), stats.requests), (50, 2));
}

#[test]
fn malformed_json_fails_naming_url_and_position() {
    for body in ["[{\"id\": \"org/a\", \"downloads\": 3", "{\"error\": \"not a list\"}", "<html>rate limited</html>"] {
        let server = Server::start(move |_, _, _| Reply::Page { body: body.to_string(), next: None });
        let tmp = tempfile::tempdir().unwrap();
        let err = format!("{:#}", list_top(&opts(&server, tmp.path()), 10, &ProgressBar::hidden()).unwrap_err());
        assert!(err.contains("invalid JSON") && err.contains(&server.url()), "{err}");
        assert!(err.contains("line 1 column"), "{err}");
        assert!(cached_files(tmp.path()).is_empty(), "a bad page is never cached");
    }
}

#[test]
fn hostile_ids_are_data_never_paths() {
    let server = Server::start(|_, _, _| {
        let mut page = entries(0..2);
        page[0]["id"] = "../../etc/passwd".into();
        page[1]["id"] = "<script>alert(1)</script>".into();
        Reply::Page { body: serde_json::to_string(&page).unwrap(), next: None }
    });
    let tmp = tempfile::tempdir().unwrap();
    let (list, _) = list_top(&opts(&server, tmp.path()), 10, &ProgressBar::hidden()).unwrap();
    assert_eq!(list.models[0].id, "../../etc/passwd");
    let files = cached_files(tmp.path());
    assert_eq!(files.len(), 1);
    assert!(files[0].starts_with("page-") && files[0].ends_with(".json"), "{files:?}");
    let top: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(top, ["hub"], "nothing written beside the cache");
}

#[test]
fn a_next_link_to_another_host_is_refused() {
    let server = Server::start(|_, _, _| Reply::Page {
        body: serde_json::to_string(&entries(0..10)).unwrap(),
        next: Some("http://hub.invalid/api/models?cursor=1".into()),
    });
    let tmp = tempfile::tempdir().unwrap();
    let err = format!("{:#}", list_top(&opts(&server, tmp.path()), 20, &ProgressBar::hidden()).unwrap_err());
    assert!(err.contains("leaves"), "{err}");
    assert_eq!(server.hits(), 1);
}

#[test]
fn relative_next_links_and_the_token() {
    let server = Server::start(|base, target, _| match page_of(base, target, 30, 10) {
        Reply::Page { body, next } => Reply::Page { body, next: next.map(|n| n.replace(base, "")) },
        other => other,
    });
    let tmp = tempfile::tempdir().unwrap();
    let o = HubOptions { token: Some("hf_test_token".into()), ..opts(&server, tmp.path()) };
    let (list, stats) = list_top(&o, 30, &ProgressBar::hidden()).unwrap();
    assert_eq!((list.models.len(), stats.requests), (30, 3));
    for r in server.requests.lock().unwrap().iter() {
        assert_eq!(r.authorization.as_deref(), Some("Bearer hf_test_token"));
    }
}

#[test]
fn a_looping_cursor_stops() {
    let server = Server::start(|base, _, _| Reply::Page {
        body: serde_json::to_string(&entries(0..10)).unwrap(),
        next: Some(format!("{base}/api/models?cursor=same")),
    });
    let tmp = tempfile::tempdir().unwrap();
    let err = format!("{:#}", list_top(&opts(&server, tmp.path()), 100, &ProgressBar::hidden()).unwrap_err());
    assert!(err.contains("loops"), "{err}");
    assert_eq!(server.hits(), 2);
}

/// An endless body is refused at the cap (it once filled 1.5 GB in 3 s), at once, without
/// retrying; a page over the cap is refused and never cached.
#[test]
fn bodies_past_the_cap_are_refused_and_never_cached() {
    let server = Server::start(|_, _, _| Reply::Endless);
    let tmp = tempfile::tempdir().unwrap();
    let o = HubOptions { max_body: 1 << 20, timeout: Duration::from_secs(30), ..opts(&server, tmp.path()) };
    let started = Instant::now();
    let err = format!("{:#}", list_top(&o, 10, &ProgressBar::hidden()).unwrap_err());
    assert!(err.contains("larger than 1 MiB"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "read until the timeout: {:?}", started.elapsed());
    assert_eq!(server.hits(), 1, "not retried");

    let big = Server::start(|base, target, _| page_of(base, target, 1000, 1000));
    let tmp = tempfile::tempdir().unwrap();
    let o = HubOptions { max_body: 64 << 10, ..opts(&big, tmp.path()) };
    let err = format!("{:#}", list_top(&o, 1000, &ProgressBar::hidden()).unwrap_err());
    assert!(err.contains("is larger than"), "{err}");
    assert!(cached_files(tmp.path()).is_empty(), "an oversized page is never cached");
    // Under the default cap the same page is read and cached.
    let (list, _) = list_top(&opts(&big, tmp.path()), 1000, &ProgressBar::hidden()).unwrap();
    assert_eq!(list.models.len(), 1000);
    assert_eq!(cached_files(tmp.path()).len(), 1);
}

/// The same cap on a single file (`ops trace --hub`'s config.json downloads, `hub::get_file`):
/// an endless body is refused at once and not retried; an oversized one is never cached.
#[test]
fn files_past_the_cap_are_refused_and_never_cached() {
    let server = Server::start(|_, _, _| Reply::Endless);
    let tmp = tempfile::tempdir().unwrap();
    let o = HubOptions { max_body: 1 << 20, timeout: Duration::from_secs(30), ..opts(&server, tmp.path()) };
    let url = format!("{}/org/model/resolve/main/config.json", server.url());
    let started = Instant::now();
    let fetched = hub::get_file(&hub::client(&o).unwrap(), &o, &url, &mut hub::Stats::default(), |_| Ok(()));
    let err = format!("{:#}", fetched.unwrap_err());
    assert!(err.contains("larger than 1 MiB"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "read until the timeout: {:?}", started.elapsed());
    assert_eq!(server.hits(), 1, "not retried");

    let big = Server::start(|_, _, _| Reply::Page {
        body: format!("{{\"pad\": \"{}\"}}", "x".repeat(100 << 10)),
        next: None,
    });
    let tmp = tempfile::tempdir().unwrap();
    let url = format!("{}/org/model/resolve/main/config.json", big.url());
    let get = |o: &HubOptions| hub::get_file(&hub::client(o).unwrap(), o, &url, &mut hub::Stats::default(), |_| Ok(()));
    let err = format!("{:#}", get(&HubOptions { max_body: 64 << 10, ..opts(&big, tmp.path()) }).unwrap_err());
    assert!(err.contains("is larger than"), "{err}");
    assert!(cached_files(tmp.path()).is_empty(), "an oversized file is never cached");
    // Under the default cap the same file is read and cached.
    assert!(!get(&opts(&big, tmp.path())).unwrap().1, "fetched, not from the cache");
    assert_eq!(cached_files(tmp.path()).len(), 1);
}

/// `HF_ENDPOINT=http://user:secret@host` authenticates, and the secret is in no output and
/// no report; a model id a spreadsheet would run as a formula is quoted in the CSV.
#[test]
fn endpoint_credentials_are_never_shown_and_csv_cells_are_not_formulas() {
    let server = Server::start(|_, _, _| {
        let mut page = entries(0..5);
        page[1]["id"] = "=HYPERLINK(\"http://evil.example\",\"x\")".into();
        page[2]["id"] = "@SUM(1+1)".into();
        page[3]["id"] = "+SUM(1+1)".into();
        page[4]["id"] = "-2+3".into();
        Reply::Page { body: serde_json::to_string(&page).unwrap(), next: None }
    });
    let tmp = tempfile::tempdir().unwrap();
    let endpoint = server.url().replace("http://", "http://me:s3cr3t@");
    let csv_path = tmp.path().join("out.csv");
    let md_path = tmp.path().join("out.md");
    for (path, format) in [(&csv_path, "csv"), (&md_path, "md")] {
        let out = assert_cmd::Command::cargo_bin("xla2tpu")
            .unwrap()
            .args(["sweep", "--hub", "--top", "5", "--format", format, "--output"])
            .arg(path)
            .env_remove("HF_TOKEN")
            .env("HF_TOKEN_PATH", "/nonexistent/xla2tpu-test/token") // no saved token of this machine
            .env_remove("HF_HUB_OFFLINE")
            .env("HF_ENDPOINT", &endpoint)
            .env("XLA2TPU_CACHE_DIR", tmp.path().join("cache"))
            .env("XLA2TPU_HUB_BACKOFF_MS", "10")
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        let shown = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{shown}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        let written = std::fs::read_to_string(path).unwrap();
        assert!(!written.contains("s3cr3t"), "{written}");
        assert!(format == "csv" || written.contains(&server.url()), "the report names the Hub it listed: {written}");
    }
    let auth = server.requests.lock().unwrap()[0].authorization.clone();
    assert_eq!(auth.as_deref(), Some("Basic bWU6czNjcjN0"), "me:s3cr3t as basic authentication");
    let mut rdr = csv::Reader::from_path(&csv_path).unwrap();
    let ids: Vec<String> = rdr.records().map(|r| r.unwrap()[1].to_string()).collect();
    assert!(ids.contains(&"'=HYPERLINK(\"http://evil.example\",\"x\")".to_string()), "{ids:?}");
    assert!(ids.contains(&"'@SUM(1+1)".to_string()), "{ids:?}");
    assert!(ids.contains(&"'+SUM(1+1)".to_string()) && ids.contains(&"'-2+3".to_string()), "{ids:?}");
}

/// Without `HF_TOKEN`, the token `huggingface-cli login` saved in `$HF_HOME/token` is sent, as
/// huggingface_hub sends it.
#[test]
fn the_saved_token_is_sent_when_hf_token_is_unset() {
    let server = Server::start(|base, target, _| page_of(base, target, 3, 10));
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("token"), "hf_saved_token\n").unwrap();
    let out = assert_cmd::Command::cargo_bin("xla2tpu")
        .unwrap()
        .args(["sweep", "--hub", "--top", "3", "--format", "csv"])
        .env_remove("HF_TOKEN")
        .env_remove("HF_TOKEN_PATH")
        .env_remove("HF_HUB_OFFLINE")
        .env("HF_HOME", tmp.path())
        .env("HF_ENDPOINT", server.url())
        .env("XLA2TPU_CACHE_DIR", tmp.path().join("cache"))
        .env("XLA2TPU_HUB_BACKOFF_MS", "10")
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let shown = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{shown}");
    assert!(!shown.contains("hf_saved_token"), "the token is never shown: {shown}");
    let auth = server.requests.lock().unwrap()[0].authorization.clone();
    assert_eq!(auth.as_deref(), Some("Bearer hf_saved_token"));
}
