//! Shared by the sweep tests: fixture paths and a tiny threaded HTTP/1.1 server on 127.0.0.1
//! that plays the Hub's `/api/models` (pages, Link headers, and scripted faults).
#![allow(dead_code)]
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep")
}

/// `../shared/data/<name>` if present; tests that need it skip (with a message) otherwise.
pub fn shared_data(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data").join(name);
    if p.is_file() {
        Some(p)
    } else {
        eprintln!("skipping: {} not found", p.display());
        None
    }
}

/// What the server does with one request.
pub enum Reply {
    /// 200 with a JSON body and an optional `Link: <next>; rel="next"`.
    Page { body: String, next: Option<String> },
    /// An error status, with an optional `Retry-After` in seconds.
    Status { code: u16, retry_after: Option<u64> },
    /// Sleep, then answer as the inner reply (or drop the connection if the client left).
    Slow(Duration, Box<Reply>),
    /// 200 declaring more bytes than it sends, then closing: a truncated body.
    Truncated(String),
    /// 200 with a body that never ends (until the client leaves, or 4 GiB).
    Endless,
}

#[derive(Debug, Clone)]
pub struct Request {
    pub target: String,
    pub authorization: Option<String>,
}

pub struct Server {
    pub addr: SocketAddr,
    pub requests: Arc<Mutex<Vec<Request>>>,
    hits: Arc<AtomicUsize>,
}

type Handler = dyn Fn(&str, &str, usize) -> Reply + Send + Sync;

impl Server {
    /// Serves until the test process ends. `handler(base, target, n)` gets the server's base
    /// URL, the request target (`/api/models?...`) and how many earlier requests had the same
    /// target.
    pub fn start(handler: impl Fn(&str, &str, usize) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().unwrap();
        let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
        let hits = Arc::new(AtomicUsize::new(0));
        let handler: Arc<Handler> = Arc::new(handler);
        let (reqs, h) = (requests.clone(), hits.clone());
        let base = format!("http://{addr}");
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (handler, reqs, h, base) = (handler.clone(), reqs.clone(), h.clone(), base.clone());
                std::thread::spawn(move || serve(stream, &base, &*handler, &reqs, &h));
            }
        });
        Server { addr, requests, hits }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn serve(mut stream: TcpStream, base: &str, handler: &Handler, reqs: &Mutex<Vec<Request>>, hits: &AtomicUsize) {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 64 * 1024 {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let authorization = head.lines().find_map(|l| {
        l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("authorization")).map(|(_, v)| v.trim().to_string())
    });
    let n = {
        let mut r = reqs.lock().unwrap();
        let n = r.iter().filter(|x| x.target == target).count();
        r.push(Request { target: target.clone(), authorization });
        n
    };
    hits.fetch_add(1, Ordering::SeqCst);
    respond(&mut stream, handler(base, &target, n));
}

fn respond(stream: &mut TcpStream, reply: Reply) {
    let out = match reply {
        Reply::Page { body, next } => {
            let link = next.map(|n| format!("Link: <{n}>; rel=\"next\"\r\n")).unwrap_or_default();
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{link}Connection: close\r\n\r\n{body}",
                body.len()
            )
        }
        Reply::Status { code, retry_after } => {
            let ra = retry_after.map(|s| format!("Retry-After: {s}\r\n")).unwrap_or_default();
            let body = format!("{{\"error\":\"status {code}\"}}");
            format!("HTTP/1.1 {code} Status\r\nContent-Length: {}\r\n{ra}Connection: close\r\n\r\n{body}", body.len())
        }
        Reply::Slow(d, inner) => {
            std::thread::sleep(d);
            return respond(stream, *inner);
        }
        Reply::Endless => return endless(stream),
        Reply::Truncated(body) => {
            let half = &body[..body.len() / 2];
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{half}",
                body.len()
            )
        }
    };
    let _ = stream.write_all(out.as_bytes());
    let _ = stream.flush();
}

/// A JSON array that never closes, sent until the client stops reading.
fn endless(stream: &mut TcpStream) {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n[";
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    let chunk = "{\"id\":\"org/endless\",\"downloads\":1},".repeat(1024);
    for _ in 0..(4u64 << 30) / chunk.len() as u64 {
        if stream.write_all(chunk.as_bytes()).is_err() {
            return;
        }
    }
}

/// Hub-shaped entries `org/model-<i>` for i in `range`, downloads descending.
pub fn entries(range: std::ops::Range<usize>) -> Vec<serde_json::Value> {
    range
        .map(|i| {
            serde_json::json!({
                "_id": format!("{i:024x}"),
                "id": format!("org/model-{i}"),
                "downloads": 1_000_000 - i as u64,
                "library_name": "transformers",
                "pipeline_tag": "text-generation",
                "tags": ["transformers", "safetensors", "llama", "text-generation"],
                "config": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "tokenizer_config": {}}
            })
        })
        .collect()
}

/// A paged listing of `total` models, `per_page` per page, with cursor links like the Hub's.
/// Page `p` is served at the first URL (p = 0) or at `/api/models?cursor=p&...`.
pub fn page_of(base: &str, target: &str, total: usize, per_page: usize) -> Reply {
    let p: usize =
        target.split(['?', '&']).find_map(|kv| kv.strip_prefix("cursor=")).and_then(|c| c.parse().ok()).unwrap_or(0);
    let start = p * per_page;
    let end = (start + per_page).min(total);
    let body = serde_json::to_string(&entries(start..end)).unwrap();
    let next = (end < total).then(|| format!("{base}/api/models?sort=downloads&limit={per_page}&cursor={}", p + 1));
    Reply::Page { body, next }
}
