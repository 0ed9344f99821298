//! Live model listing from the Hugging Face Hub (`--hub`): `GET /api/models` sorted by
//! downloads, only the fields the resolver needs, 1,000 per page (so the top 5,000 is 5
//! requests), following the `Link: rel="next"` cursor. Retries 408/429/5xx, timeouts and broken
//! bodies with exponential backoff (honouring `Retry-After`), then fails naming the URL and
//! the last status. Pages are cached on disk one file per URL hash, written atomically, so a
//! re-run costs no requests and pages fetched before a failure are kept. A response body is
//! read through a counter and refused past [`MAX_BODY`] (an endless or huge body once filled
//! memory, and was cached); a refused body is neither retried nor cached.
//!
//! Environment: `HF_ENDPOINT`, `HF_TOKEN` (else the saved token file: `HF_TOKEN_PATH`, `HF_HOME`),
//! `HF_HUB_OFFLINE` (as huggingface_hub reads them),
//! `XLA2TPU_CACHE_DIR` (cache root), `XLA2TPU_HUB_BACKOFF_MS` and `XLA2TPU_HUB_TIMEOUT_MS`
//! (tests shorten these).
//!
//! Retry and cache are written here because no maintained library fits a blocking client:
//! `reqwest-retry` and `http-cache-reqwest` are `reqwest-middleware` layers, which wrap the async
//! client only, and `hf-hub`'s sync API fetches a repository's files but cannot list models by
//! downloads. The body cap must see every byte anyway, which a caching layer below it would not.
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use indicatif::ProgressBar;
use reqwest::Url;
use reqwest::blocking::{Client, Response};
use reqwest::header::{HeaderMap, LINK, RETRY_AFTER};
use serde::{Deserialize, Serialize};

use super::models::{self, ModelList, ModelRecord, SourceInfo};
use crate::output::count;

pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";
/// The Hub's largest page.
pub const PAGE_SIZE: usize = 1000;
/// Guards against a server whose cursor never ends.
const MAX_PAGES: usize = 1000;
/// The largest response body read: a listing page of 1,000 models with their configs is a few
/// MB, a model's `config.json` a few KB.
pub const MAX_BODY: u64 = 64 << 20;
const EXPAND: [&str; 5] = ["config", "downloads", "library_name", "pipeline_tag", "tags"];

#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Total tries per page, the first included.
    pub attempts: u32,
    /// First backoff; doubles on each retry.
    pub base: Duration,
    /// Cap on any single sleep, `Retry-After` included.
    pub max_sleep: Duration,
}

impl RetryPolicy {
    fn backoff(&self, retry: u32) -> Duration {
        self.base.saturating_mul(1 << retry.min(16)).min(self.max_sleep)
    }
}

#[derive(Debug, Clone)]
pub struct HubOptions {
    /// Without user information: `HF_ENDPOINT=https://user:pass@mirror` is sent as basic
    /// authentication and never shown.
    pub endpoint: String,
    pub token: Option<String>,
    /// The user and password `HF_ENDPOINT` carried, if any.
    pub basic_auth: Option<(String, Option<String>)>,
    /// Cache only, no network (`HF_HUB_OFFLINE=1`).
    pub offline: bool,
    /// Ignore cached pages (they are still rewritten).
    pub refresh: bool,
    pub cache_dir: PathBuf,
    pub retry: RetryPolicy,
    pub connect_timeout: Duration,
    /// Whole request, body included.
    pub timeout: Duration,
    /// Bodies longer than this are refused ([`MAX_BODY`]).
    pub max_body: u64,
}

/// The token `huggingface-cli login` saved, where huggingface_hub looks for it when `HF_TOKEN`
/// is unset: `HF_TOKEN_PATH`, else `$HF_HOME/token` (`HF_HOME` defaulting to
/// `$XDG_CACHE_HOME/huggingface`, then `~/.cache/huggingface`).
fn saved_token(var: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let path = match var("HF_TOKEN_PATH") {
        Some(path) => PathBuf::from(path),
        None => {
            let home = var("HF_HOME").map(PathBuf::from).or_else(|| {
                let cache = var("XDG_CACHE_HOME")
                    .map(PathBuf::from)
                    .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")));
                cache.map(|c| c.join("huggingface"))
            })?;
            home.join("token")
        }
    };
    // A token file is one line; anything unreadable or empty is no token, as for huggingface_hub.
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.trim().to_string()).filter(|t| !t.is_empty() && !t.contains(char::is_whitespace))
}

impl HubOptions {
    pub fn from_env(refresh: bool) -> Result<Self> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let millis = |k: &str, default: u64| -> Result<Duration> {
            Ok(Duration::from_millis(match var(k) {
                Some(v) => v.trim().parse().with_context(|| format!("{k}={v:?} is not a number of milliseconds"))?,
                None => default,
            }))
        };
        let cache_root = crate::cache::root()?;
        let offline = var("HF_HUB_OFFLINE")
            .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"));
        if offline && refresh {
            bail!("--refresh needs the network, but HF_HUB_OFFLINE is set");
        }
        let timeout = millis("XLA2TPU_HUB_TIMEOUT_MS", 60_000)?;
        let endpoint = var("HF_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        let (endpoint, basic_auth) = crate::redact::split_userinfo(endpoint.trim());
        Ok(HubOptions {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            token: var("HF_TOKEN").or_else(|| saved_token(&var)),
            basic_auth,
            offline,
            refresh,
            cache_dir: cache_root.join("hub"),
            retry: RetryPolicy {
                attempts: 5,
                base: millis("XLA2TPU_HUB_BACKOFF_MS", 1_000)?,
                max_sleep: Duration::from_secs(60),
            },
            connect_timeout: timeout.min(Duration::from_secs(10)),
            timeout,
            max_body: MAX_BODY,
        })
    }

    /// The first page's URL for the top `top` models.
    pub fn first_url(&self, top: usize) -> String {
        let expand: String = EXPAND.iter().map(|e| format!("&expand={e}")).collect();
        format!("{}/api/models?sort=downloads&direction=-1&limit={}{expand}", self.endpoint, top.clamp(1, PAGE_SIZE))
    }
}

/// What a listing cost, for the report.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub requests: usize,
    pub pages_fetched: usize,
    pub pages_cached: usize,
    /// Unix time of the oldest page used.
    pub oldest: Option<u64>,
}

/// Lists the top `top` models by downloads.
pub fn list_top(opts: &HubOptions, top: usize, progress: &ProgressBar) -> Result<(ModelList, Stats)> {
    let client = client(opts)?;
    let base = Url::parse(&opts.endpoint).with_context(|| format!("HF_ENDPOINT {:?} is not a URL", opts.endpoint))?;
    let cache = Cache { dir: opts.cache_dir.clone(), max_body: opts.max_body };
    let mut stats = Stats::default();
    let mut models: Vec<ModelRecord> = Vec::with_capacity(top);
    let mut visited = HashSet::new();
    let mut url = opts.first_url(top);
    progress.set_length(top as u64);
    while models.len() < top {
        if !visited.insert(url.clone()) || visited.len() > MAX_PAGES {
            bail!("the Hub's pagination loops or does not end (at {url})");
        }
        let cached = if opts.refresh { None } else { cache.get(&url) };
        let (page, records) = match cached {
            Some(hit) => {
                stats.pages_cached += 1;
                hit
            }
            None if opts.offline => {
                bail!("HF_HUB_OFFLINE is set and {url} is not in the cache ({})", cache.dir.display())
            }
            None => {
                progress.set_message(format!("fetching page {}", visited.len()));
                let fetched = fetch(&client, opts, &url, &mut stats)?;
                // An unwritable cache costs the next run requests; it must not lose this one.
                if let Err(e) = cache.put(&fetched.0) {
                    eprintln!("warning: page not cached: {e:#}");
                }
                stats.pages_fetched += 1;
                fetched
            }
        };
        stats.oldest = Some(stats.oldest.map_or(page.fetched_at, |o| o.min(page.fetched_at)));
        let empty = records.is_empty();
        models.extend(records);
        progress.set_position(models.len().min(top) as u64);
        match page.next {
            Some(next) if !empty => url = same_origin(&base, &next)?,
            _ => break,
        }
    }
    models.truncate(top);
    progress.finish_and_clear();
    let captured = stats.oldest.map(|t| format!("{} (30-day downloads)", utc(t)));
    let list = ModelList {
        source: SourceInfo {
            kind: "hub".into(),
            name: format!("{}/api/models", opts.endpoint),
            attribution: "live listing from the Hugging Face Hub API, sorted by downloads".into(),
            captured,
            notes: vec![format!(
                "{} from the cache ({}), {} fetched with {}",
                count(stats.pages_cached, "page"),
                cache.dir.display(),
                stats.pages_fetched,
                count(stats.requests, "request")
            )],
            rows: models.len(),
        },
        models,
    };
    Ok((list, stats))
}

/// The Hub URL of one file of a model repository at `main` (`{endpoint}/{id}/resolve/main/{path}`).
pub fn file_url(opts: &HubOptions, id: &str, path: &str) -> String {
    format!("{}/{id}/resolve/main/{path}", opts.endpoint)
}

/// GETs one file (a model's `config.json`) with the listing's retries, token and cache: a
/// cached copy is used unless `--refresh`; a fetched one is cached only once `check` accepts
/// its body, so a malformed file is never cached (and not retried: the server sent all of it).
/// Returns the body and whether it came from the cache.
pub fn get_file(
    client: &Client,
    opts: &HubOptions,
    url: &str,
    stats: &mut Stats,
    check: impl Fn(&str) -> Result<()>,
) -> Result<(String, bool)> {
    let cache = Cache { dir: opts.cache_dir.clone(), max_body: opts.max_body };
    if !opts.refresh
        && let Some(page) = cache.get_page(url)
        && check(&page.body).is_ok()
    {
        return Ok((page.body, true));
    }
    if opts.offline {
        bail!("HF_HUB_OFFLINE is set and {url} is not in the cache ({})", cache.dir.display());
    }
    let body = get_retrying(client, opts, url, stats, |resp| read_body(resp, opts.max_body))?;
    check(&body).with_context(|| format!("GET {url}"))?;
    if let Err(e) = cache.put(&Page { url: url.to_string(), next: None, fetched_at: now(), body: body.clone() }) {
        eprintln!("warning: {url} not cached: {e:#}");
    }
    Ok((body, false))
}

pub fn client(opts: &HubOptions) -> Result<Client> {
    // Follow redirects only within the endpoint's host: the token must not travel elsewhere.
    let redirect = reqwest::redirect::Policy::custom(|attempt| {
        let same_host = attempt.previous().first().map(|u| u.host_str()) == Some(attempt.url().host_str());
        if same_host && attempt.previous().len() < 5 { attempt.follow() } else { attempt.stop() }
    });
    let mut builder = Client::builder()
        .user_agent(concat!("xla2tpu/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(opts.connect_timeout)
        .timeout(opts.timeout)
        .redirect(redirect);
    // A system proxy cannot reach a local endpoint (tests, mirrors on this host).
    if Url::parse(&opts.endpoint).ok().and_then(|u| u.host_str().map(is_loopback)).unwrap_or(false) {
        builder = builder.no_proxy();
    }
    builder.build().context("cannot build the HTTP client")
}

fn is_loopback(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1")
}

/// GETs one page with retries; returns it only once its body parses.
fn fetch(client: &Client, opts: &HubOptions, url: &str, stats: &mut Stats) -> Result<(Page, Vec<ModelRecord>)> {
    get_retrying(client, opts, url, stats, |resp| read_page(resp, url, opts.max_body))
}

/// A body past the cap.
#[derive(Debug)]
struct TooLarge(u64);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the response is larger than {} MiB, the most xla2tpu reads; refused", self.0 >> 20)
    }
}

impl std::error::Error for TooLarge {}

/// The body as text, read through a counter: never more than `max` bytes in memory.
fn read_body(resp: Response, max: u64) -> Result<String> {
    use std::io::Read;
    if resp.content_length().is_some_and(|n| n > max) {
        return Err(TooLarge(max).into());
    }
    let mut body = Vec::new();
    resp.take(max + 1).read_to_end(&mut body).map_err(|e| {
        let cause = e.get_ref().and_then(|c| c.downcast_ref::<reqwest::Error>()).map(describe);
        anyhow::anyhow!("reading the body: {}", cause.unwrap_or_else(|| e.to_string()))
    })?;
    if body.len() as u64 > max {
        return Err(TooLarge(max).into());
    }
    String::from_utf8(body).map_err(|e| anyhow::anyhow!("the body is not UTF-8: {e}"))
}

/// GET with the retry policy: 408/429/5xx, timeouts and bodies that `read` rejects are
/// retried with backoff (honouring `Retry-After`); another status fails at once.
fn get_retrying<T>(
    client: &Client,
    opts: &HubOptions,
    url: &str,
    stats: &mut Stats,
    read: impl Fn(Response) -> Result<T>,
) -> Result<T> {
    let policy = &opts.retry;
    let mut last = String::new();
    for attempt in 0..policy.attempts.max(1) {
        stats.requests += 1;
        let mut req = client.get(url);
        if let Some(token) = &opts.token {
            req = req.bearer_auth(token);
        } else if let Some((user, password)) = &opts.basic_auth {
            req = req.basic_auth(user, password.as_ref());
        }
        let wait = match req.send() {
            Err(e) => {
                last = describe(&e);
                policy.backoff(attempt)
            }
            Ok(resp) if resp.status().is_success() => match read(resp) {
                Ok(ok) => return Ok(ok),
                // The server sent (or announced) it all: asking again brings the same.
                Err(e) if e.downcast_ref::<TooLarge>().is_some() => {
                    bail!("GET {url}: {e}")
                }
                Err(e) => {
                    last = format!("{e:#}");
                    policy.backoff(attempt)
                }
            },
            Ok(resp) => {
                let status = resp.status();
                last = format!("HTTP {status}");
                if !(status.as_u16() == 408 || status.as_u16() == 429 || status.is_server_error()) {
                    let hint =
                        if matches!(status.as_u16(), 401 | 403) { " (check HF_TOKEN or the saved token)" } else { "" };
                    bail!("GET {url}: HTTP {status}{hint}");
                }
                retry_after(resp.headers()).unwrap_or_else(|| policy.backoff(attempt)).min(policy.max_sleep)
            }
        };
        if attempt + 1 < policy.attempts {
            std::thread::sleep(wait);
        }
    }
    bail!("GET {url} failed after {}; last error: {last}", count(policy.attempts.max(1), "attempt"))
}

fn read_page(resp: Response, url: &str, max: u64) -> Result<(Page, Vec<ModelRecord>)> {
    let next = next_link(resp.headers());
    let body = read_body(resp, max)?;
    let records = models::parse_json_array(&body, url)?;
    Ok((Page { url: url.to_string(), next, fetched_at: now(), body }, records))
}

/// reqwest's top-level message hides the cause ("error sending request"); add the chain.
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".into();
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

/// `Retry-After` in seconds (the HTTP-date form falls back to the backoff).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers.get(RETRY_AFTER)?.to_str().ok()?.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// The `rel="next"` target of `Link` headers: `<https://…&cursor=…>; rel="next"`.
pub fn next_link(headers: &HeaderMap) -> Option<String> {
    headers.get_all(LINK).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).find_map(|link| {
        let (target, params) = link.trim().split_once(';')?;
        let is_next = params.split(';').any(|p| {
            let p = p.trim().replace(' ', "");
            p == "rel=\"next\"" || p == "rel=next"
        });
        is_next.then(|| target.trim().trim_start_matches('<').trim_end_matches('>').to_string())
    })
}

/// Resolves a next link against the endpoint and refuses other hosts: a listing must not send
/// us (and our token) elsewhere.
fn same_origin(base: &Url, link: &str) -> Result<String> {
    let url = base.join(link).with_context(|| format!("bad next link {link:?}"))?;
    if url.origin() != base.origin() {
        bail!("the listing's next link {url} leaves {}", base.origin().ascii_serialization());
    }
    Ok(url.to_string())
}

/// One cached listing page.
#[derive(Debug, Serialize, Deserialize)]
struct Page {
    url: String,
    next: Option<String>,
    fetched_at: u64,
    body: String,
}

struct Cache {
    dir: PathBuf,
    max_body: u64,
}

impl Cache {
    /// File names are hashes of the URL: nothing from the network ever becomes a path.
    fn path(&self, url: &str) -> PathBuf {
        self.dir.join(format!("page-{:016x}.json", fnv1a(url.as_bytes())))
    }

    /// A usable cached page, or `None` (absent, unreadable or for another URL).
    fn get(&self, url: &str) -> Option<(Page, Vec<ModelRecord>)> {
        let page = self.get_page(url)?;
        let records = models::parse_json_array(&page.body, url).ok()?;
        Some((page, records))
    }

    /// The cached response for `url` (a listing page or a file), unparsed.
    fn get_page(&self, url: &str) -> Option<Page> {
        let path = self.path(url);
        // A body past the cap (an older release cached them) is not read at all; escaped in
        // JSON, a body may take up to twice its size.
        if std::fs::metadata(&path).ok()?.len() > 2 * self.max_body + 4096 {
            return None;
        }
        let text = std::fs::read_to_string(path).ok()?;
        let page: Page = serde_json::from_str(&text).ok()?;
        (page.url == url).then_some(page)
    }

    fn put(&self, page: &Page) -> Result<()> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create the cache {}", self.dir.display()))?;
        let text = serde_json::to_string(page)?;
        crate::write::create(&self.path(&page.url), text.as_bytes())
    }
}

/// FNV-1a 64: a stable hash (std's hasher may change between releases, orphaning the cache).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Unix seconds → `YYYY-MM-DD HH:MM UTC` (Howard Hinnant's civil-from-days).
fn utc(secs: u64) -> String {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn the_saved_token_is_found_where_huggingface_hub_saves_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("hf");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("token"), "hf_saved\n").unwrap();
        let env = |pairs: Vec<(&'static str, String)>| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
        };
        let hf_home = home.display().to_string();
        assert_eq!(saved_token(&env(vec![("HF_HOME", hf_home.clone())])).as_deref(), Some("hf_saved"));
        let xdg = dir.path().display().to_string();
        std::fs::rename(&home, dir.path().join("huggingface")).unwrap();
        assert_eq!(saved_token(&env(vec![("XDG_CACHE_HOME", xdg)])).as_deref(), Some("hf_saved"));
        let path = dir.path().join("huggingface/token").display().to_string();
        assert_eq!(
            saved_token(&env(vec![("HF_TOKEN_PATH", path), ("HF_HOME", hf_home.clone())])).as_deref(),
            Some("hf_saved")
        );
        std::fs::write(dir.path().join("huggingface/token"), "  \n").unwrap();
        assert_eq!(saved_token(&env(vec![("XDG_CACHE_HOME", dir.path().display().to_string())])), None);
        assert_eq!(saved_token(&env(vec![("HF_HOME", hf_home)])), None, "no file");
    }

    #[test]
    fn link_header() {
        let mut h = HeaderMap::new();
        h.insert(LINK, HeaderValue::from_static("<https://huggingface.co/api/models?cursor=abc>; rel=\"next\""));
        assert_eq!(next_link(&h).as_deref(), Some("https://huggingface.co/api/models?cursor=abc"));
        h.insert(LINK, HeaderValue::from_static("<https://x/prev>; rel=\"prev\""));
        assert_eq!(next_link(&h), None);
    }

    #[test]
    fn next_link_stays_on_the_endpoint() {
        let base = Url::parse("http://127.0.0.1:8080").unwrap();
        assert!(same_origin(&base, "/api/models?cursor=1").is_ok());
        assert!(same_origin(&base, "https://evil.example/api/models").is_err());
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_791_806_400), "2026-10-12 12:00 UTC");
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy { attempts: 5, base: Duration::from_millis(100), max_sleep: Duration::from_millis(350) };
        assert_eq!(p.backoff(0), Duration::from_millis(100));
        assert_eq!(p.backoff(1), Duration::from_millis(200));
        assert_eq!(p.backoff(2), Duration::from_millis(350));
    }
}
