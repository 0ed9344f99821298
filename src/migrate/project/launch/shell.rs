//! Shell commands (scripts, Dockerfile `RUN`, notebook `!` lines), split into simple commands
//! and words: enough to find variable assignments, launchers and `pip install`. Quotes, `$(…)`,
//! comments, continuations and redirections are understood; here-documents are skipped whole.

use std::ops::Range;

use ruff_text_size::TextRange;

use super::findings::{EnvSite, Findings, fix, range};
use crate::migrate::fix::{Edit, Fix};
use crate::migrate::rules::{Builtin, Safety};
use crate::source::{line_end_inclusive, line_start, newline_of};

/// Quoted commands inside quoted commands are not followed deeper than this.
const MAX_DEPTH: usize = 4;

/// Where commands are read, and what deleting all of them means there.
#[derive(Debug, Clone, Copy)]
pub(super) struct Region {
    range: TextRange,
    place: Place,
    depth: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A shell script: a command alone on its lines is deleted with them.
    Script,
    /// A Dockerfile instruction or a notebook line: this range goes when its only command does.
    Whole(TextRange),
    /// The quoted command of `bash -c "…"` or `gcloud … --command="…"`.
    Quoted,
    /// Shell text `echo`/`printf` writes into a file (`echo 'export V=1' >> ~/.bashrc`): read,
    /// never edited (a person decides whether the line that writes it goes).
    Written,
}

impl Region {
    pub(super) fn script(text: &str) -> Region {
        Region { range: range(0, text.len()), place: Place::Script, depth: 0 }
    }

    pub(super) fn whole(range: TextRange, whole: TextRange) -> Region {
        Region { range, place: Place::Whole(whole), depth: 0 }
    }

    /// A script embedded in another file: a YAML literal block (`args: ["-c", |…]`) is a script
    /// of its own lines; a one-line string is like the quoted command of `bash -c "…"`.
    pub(super) fn embedded(range: TextRange, block: bool) -> Region {
        Region { range, place: if block { Place::Script } else { Place::Quoted }, depth: 1 }
    }
}

/// What separates two commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// The start or end of the region.
    Edge,
    Newline,
    Semi,
    And,
    Or,
    Pipe,
    Background,
    Open,
    Close,
}

#[derive(Debug, Clone)]
pub(super) struct Command {
    /// The words, without leading keywords (`then`, `do`, `!`…) and redirections.
    pub(super) words: Vec<TextRange>,
    /// Words and redirections in order: what deleting a word steps over.
    tokens: Vec<TextRange>,
    before: (Op, TextRange),
    after: (Op, TextRange),
    /// First in a block (`then`, `do`, `else`, `{`, `(`).
    opens: bool,
    /// Starts with a word that closes the block before it (`fi`, `done`, `else`, `}`…).
    closes: bool,
}

impl Command {
    fn new(before: (Op, TextRange)) -> Command {
        let opens = before.0 == Op::Open;
        Command { words: Vec::new(), tokens: Vec::new(), before, after: before, opens, closes: false }
    }

    fn extent(&self) -> TextRange {
        let first = self.tokens.first().map_or(self.before.1.end(), |t| t.start());
        TextRange::new(first, self.tokens.last().map_or(first, |t| t.end()))
    }
}

/// Keywords that may precede a command; the block openers among them.
const LEADING: &[&str] = &["if", "elif", "while", "until", "then", "do", "else", "{", "!"];
const OPENERS: &[&str] = &["then", "do", "else", "{"];
const CLOSERS: &[&str] = &["fi", "done", "}", "esac", "else", "elif"];

/// Split `within` into simple commands.
pub(super) fn commands(text: &str, within: TextRange) -> Vec<Command> {
    let mut lx = Lexer { text, bytes: text.as_bytes(), at: within.start().into(), end: within.end().into() };
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let mut done = Vec::new();
    let mut cur = Command::new((Op::Edge, TextRange::empty(within.start())));
    loop {
        lx.skip_blanks();
        let Some(&b) = lx.bytes.get(lx.at).filter(|_| lx.at < lx.end) else {
            cur.after = (Op::Edge, TextRange::empty(within.end()));
            finish(&mut done, cur);
            return done;
        };
        let start = lx.at;
        match b {
            b'#' => lx.skip_while(|b| b != b'\n'),
            b'\n' | b';' | b'|' | b'(' | b')' | b'&' if !lx.at_redirect() => {
                let op = lx.operator();
                let op_range = range(start, lx.at);
                if op == Op::Newline {
                    for (delimiter, tabs) in heredocs.drain(..) {
                        lx.skip_heredoc(&delimiter, tabs);
                    }
                }
                let next = Command::new((op, op_range));
                let mut prev = std::mem::replace(&mut cur, next);
                prev.after = (op, op_range);
                if prev.tokens.is_empty() {
                    // Keywords or nothing: the block state carries over to the next command.
                    cur.opens |= prev.opens;
                    cur.closes |= prev.closes;
                } else {
                    done.push(prev);
                }
            }
            _ => {
                if let Some(heredoc) = lx.redirect() {
                    heredocs.extend(heredoc);
                    cur.tokens.push(range(start, lx.at));
                    continue;
                }
                lx.word();
                let word = range(start, lx.at);
                let spelled = &text[word];
                if cur.words.is_empty() && cur.tokens.is_empty() && LEADING.contains(&spelled) {
                    cur.closes |= CLOSERS.contains(&spelled) && !cur.opens;
                    cur.opens |= OPENERS.contains(&spelled);
                    continue;
                }
                if cur.words.is_empty() && CLOSERS.contains(&spelled) {
                    cur.closes = true;
                }
                cur.words.push(word);
                cur.tokens.push(word);
            }
        }
    }
}

fn finish(done: &mut Vec<Command>, cur: Command) {
    if !cur.tokens.is_empty() {
        done.push(cur);
    }
}

struct Lexer<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    end: usize,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        let i = self.at + ahead;
        (i < self.end).then(|| self.bytes[i])
    }

    fn skip_while(&mut self, keep: impl Fn(u8) -> bool) {
        while self.peek(0).is_some_and(&keep) {
            self.at += 1;
        }
    }

    /// Spaces, tabs, carriage returns and line continuations.
    fn skip_blanks(&mut self) {
        loop {
            match (self.peek(0), self.peek(1), self.peek(2)) {
                (Some(b' ' | b'\t' | b'\r'), _, _) => self.at += 1,
                (Some(b'\\'), Some(b'\n'), _) => self.at += 2,
                (Some(b'\\'), Some(b'\r'), Some(b'\n')) => self.at += 3,
                _ => return,
            }
        }
    }

    /// `&>` is a redirection, not `&`.
    fn at_redirect(&self) -> bool {
        self.peek(0) == Some(b'&') && self.peek(1) == Some(b'>')
    }

    fn operator(&mut self) -> Op {
        let (first, second) = (self.peek(0), self.peek(1));
        self.at += 1;
        let (op, pair) = match (first, second) {
            (Some(b'&'), Some(b'&')) => (Op::And, true),
            (Some(b'|'), Some(b'|')) => (Op::Or, true),
            (Some(b'|'), Some(b'&')) => (Op::Pipe, true),
            (Some(b';'), Some(b';' | b'&')) => (Op::Semi, true),
            (Some(b'&'), _) => (Op::Background, false),
            (Some(b'|'), _) => (Op::Pipe, false),
            (Some(b';'), _) => (Op::Semi, false),
            (Some(b'('), _) => (Op::Open, false),
            (Some(b')'), _) => (Op::Close, false),
            _ => (Op::Newline, false),
        };
        self.at += usize::from(pair);
        op
    }

    /// A redirection (`> f`, `2>&1`, `&>f`, `<<EOF`) and its target; a here-document's
    /// delimiter (and whether `<<-` strips tabs) is returned to skip its body later.
    fn redirect(&mut self) -> Option<Option<(String, bool)>> {
        let digits = self.bytes[self.at..self.end].iter().take_while(|b| b.is_ascii_digit()).count();
        let after = self.at + digits;
        let is_redirect = matches!(self.bytes.get(after), Some(b'<' | b'>')) && after < self.end || self.at_redirect();
        if !is_redirect {
            return None;
        }
        self.at = after;
        let heredoc = self.peek(0) == Some(b'<') && self.peek(1) == Some(b'<') && self.peek(2) != Some(b'<');
        self.skip_while(|b| matches!(b, b'<' | b'>' | b'&'));
        let strip_tabs = heredoc && self.peek(0) == Some(b'-');
        if strip_tabs || self.peek(0) == Some(b'|') {
            self.at += 1;
        }
        self.skip_blanks();
        let target = self.at;
        self.word();
        let delimiter = self.text[target..self.at].replace(['\'', '"', '\\'], "");
        Some((heredoc && !delimiter.is_empty()).then_some((delimiter, strip_tabs)))
    }

    /// One word: up to an unquoted blank, operator or redirection.
    fn word(&mut self) {
        while let Some(b) = self.peek(0) {
            match b {
                b' ' | b'\t' | b'\r' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>' => return,
                b'\'' => self.quoted(b'\''),
                b'"' | b'`' => self.quoted(b),
                b'\\' => self.at = (self.at + 2).min(self.end),
                b'$' if matches!(self.peek(1), Some(b'(' | b'{')) => self.balanced(),
                _ => self.at += 1,
            }
        }
    }

    /// A quoted string from its opening quote through its closing one (`\` escapes in `"`).
    fn quoted(&mut self, quote: u8) {
        self.at += 1;
        while let Some(b) = self.peek(0) {
            self.at += 1;
            match b {
                b'\\' if quote != b'\'' => self.at = (self.at + 1).min(self.end),
                b if b == quote => return,
                _ => {}
            }
        }
    }

    /// `$(…)`, `$((…))` or `${…}`, nested and quoted parts included.
    fn balanced(&mut self) {
        let (open, close) = if self.peek(1) == Some(b'(') { (b'(', b')') } else { (b'{', b'}') };
        self.at += 2;
        let mut depth = 1;
        while let Some(b) = self.peek(0) {
            match b {
                b'\'' | b'"' | b'`' => self.quoted(b),
                b'\\' => self.at = (self.at + 2).min(self.end),
                _ => {
                    self.at += 1;
                    depth += i32::from(b == open) - i32::from(b == close);
                    if depth == 0 {
                        return;
                    }
                }
            }
        }
    }

    /// The lines of a here-document, through its delimiter line.
    fn skip_heredoc(&mut self, delimiter: &str, strip_tabs: bool) {
        while self.at < self.end {
            let next = line_end_inclusive(self.text, self.at).min(self.end);
            let line = self.text[self.at..next].trim_end_matches(['\n', '\r']);
            let line = if strip_tabs { line.trim_start_matches('\t') } else { line };
            self.at = next;
            if line == delimiter {
                return;
            }
        }
    }
}

/// Find what every command of `region` says about torch_xla.
pub(super) fn scan(found: &mut Findings, region: Region) {
    let cmds = commands(found.text, region.range);
    for ci in 0..cmds.len() {
        Scan { found: &mut *found, region, cmds: &cmds, ci }.command();
    }
}

/// One command being read, with its neighbours (which deleting it may involve).
struct Scan<'a, 'f> {
    found: &'a mut Findings<'f>,
    region: Region,
    cmds: &'a [Command],
    ci: usize,
}

impl Scan<'_, '_> {
    fn cmd(&self) -> &Command {
        &self.cmds[self.ci]
    }

    fn word(&self, k: usize) -> &str {
        self.cmd().words.get(k).map_or("", |&w| &self.found.text[w])
    }

    fn command(&mut self) {
        let mut k = 0;
        while let Some(len) = assigned_name(self.word(k)).map(str::len) {
            self.env_site(k..k + 1, self.name_at(k, 0, len));
            k += 1;
        }
        self.program(k, None);
    }

    /// The program run by the word at `k`, after prefix assignments; `blocker` names a wrapper
    /// that keeps a launcher from being converted.
    fn program(&mut self, k: usize, blocker: Option<&str>) {
        let len = self.cmd().words.len();
        let program = self.word(k).rsplit('/').next().unwrap_or_default().to_string();
        match program.as_str() {
            "export" | "declare" | "typeset" => {
                for j in k + 1..len {
                    let w = self.word(j);
                    let len = assigned_name(w).map_or(w.len(), str::len);
                    if is_name(&w[..len]) {
                        self.env_site(j..j + 1, self.name_at(j, 0, len));
                    }
                }
            }
            "env" => {
                let mut j = k + 1;
                while j < len {
                    match self.word(j) {
                        "-u" | "--unset" | "-C" | "--chdir" | "-S" => j += 2,
                        w if w.starts_with('-') => j += 1,
                        w => match assigned_name(w).map(str::len) {
                            Some(len) => {
                                self.env_site(j..j + 1, self.name_at(j, 0, len));
                                j += 1;
                            }
                            None => return self.program(j, blocker),
                        },
                    }
                }
            }
            "nohup" | "exec" | "time" | "nice" | "sudo" => {
                let blocker = blocker.or((program == "sudo").then_some("sudo"));
                let mut j = k + 1;
                while self.word(j).starts_with('-') {
                    j += if matches!(self.word(j), "-n" | "-u" | "-g") { 2 } else { 1 };
                }
                if j < len {
                    self.program(j, blocker);
                }
            }
            "echo" | "printf" => self.written(k),
            "docker" | "podman" => self.container_env(k),
            "gcloud" => self.quoted_command(k, "--command"),
            "bash" | "sh" | "zsh" | "dash" => self.quoted_command(k, "-c"),
            "accelerate" if self.word(k + 1) == "launch" => self.accelerate(k, blocker),
            "uv" if self.word(k + 1) == "pip" && self.word(k + 2) == "install" => self.pip(k),
            p if is_pip(p) && self.word(k + 1) == "install" => self.pip(k),
            p if is_python(p) => self.python(k, blocker),
            _ => {}
        }
    }

    /// `echo 'export PJRT_DEVICE=TPU' >> ~/.bashrc`: what goes into a file (a redirection) is shell
    /// code the next shell runs, so its quoted words are read as commands.
    fn written(&mut self, k: usize) {
        let (cmd, text) = (self.cmd(), self.found.text);
        let redirected = cmd.tokens.iter().any(|t| !cmd.words.contains(t) && text[*t].contains('>'));
        if !redirected || self.region.depth >= MAX_DEPTH {
            return;
        }
        let words: Vec<TextRange> = cmd.words[k + 1..].to_vec();
        for w in words {
            let spelled = &text[w];
            if let [q @ (b'"' | b'\''), .., last] = spelled.as_bytes()
                && last == q
                && spelled.len() >= 2
            {
                let inner =
                    TextRange::new(w.start() + super::findings::offset(1), w.end() - super::findings::offset(1));
                scan(self.found, Region { range: inner, place: Place::Written, depth: self.region.depth + 1 });
            }
        }
    }

    /// `-e VAR=…`, `--env VAR=…` and `--env=VAR=…` of `docker run` and the like.
    fn container_env(&mut self, k: usize) {
        for j in k + 1..self.cmd().words.len() {
            if let Some(len) = self.word(j).strip_prefix("--env=").and_then(assigned_name).map(str::len) {
                self.env_site(j..j + 1, self.name_at(j, "--env=".len(), len));
            } else if matches!(self.word(j), "-e" | "--env")
                && let Some(len) = assigned_name(self.word(j + 1)).map(str::len)
            {
                self.env_site(j..j + 2, self.name_at(j + 1, 0, len));
            }
        }
    }

    /// A command given as one quoted word after `flag` (`--command="…"`, `-c '…'`) is read too.
    fn quoted_command(&mut self, k: usize, flag: &str) {
        if self.region.depth >= MAX_DEPTH {
            return;
        }
        let words = &self.cmd().words;
        let text = self.found.text;
        let inline = format!("{flag}=");
        let value = (k + 1..words.len()).find_map(|j| {
            let w = &text[words[j]];
            if w == flag {
                words.get(j + 1).copied()
            } else {
                w.starts_with(&inline)
                    .then(|| TextRange::new(words[j].start() + super::findings::offset(inline.len()), words[j].end()))
            }
        });
        let Some(value) = value else { return };
        let spelled = &text[value];
        let inner = match spelled.as_bytes() {
            [q @ (b'"' | b'\''), .., last] if last == q && spelled.len() >= 2 => {
                TextRange::new(value.start() + super::findings::offset(1), value.end() - super::findings::offset(1))
            }
            _ => value,
        };
        scan(self.found, Region { range: inner, place: Place::Quoted, depth: self.region.depth + 1 });
    }

    /// `accelerate launch --tpu …`: its options up to the training script; the TPU ones select
    /// the torch_xla launcher and become accelerate's torchrun launcher, one process per chip.
    fn accelerate(&mut self, k: usize, blocker: Option<&str>) {
        // accelerate's options that take no value: the script is the first other word.
        const SWITCHES: &[&str] = &[
            "cpu",
            "multi_gpu",
            "tpu",
            "tpu_cluster",
            "tpu_use_cluster",
            "tpu_use_sudo",
            "downcast_bf16",
            "ipex",
            "mps",
            "use_deepspeed",
            "use_fsdp",
            "use_megatron_lm",
            "debug",
            "no_python",
            "module",
            "quiet",
            "dynamo_use_fullgraph",
            "dynamo_use_dynamic",
            "same_network",
            "enable_cpu_affinity",
            "m",
            "q",
        ];
        const TPU_FLAGS: &[&str] = &["tpu", "tpu_cluster", "tpu_use_cluster", "tpu_use_sudo", "downcast_bf16"];
        let name = |w: &str| w.trim_start_matches('-').split('=').next().unwrap_or_default().replace('-', "_");
        let (mut j, mut tpu, mut processes, mut config, mut multi) = (k + 2, Vec::new(), Vec::new(), None, false);
        while j < self.cmd().words.len() && self.word(j).starts_with('-') {
            let option = name(self.word(j));
            let takes_value = !SWITCHES.contains(&option.as_str()) && !self.word(j).contains('=');
            if TPU_FLAGS.contains(&option.as_str()) {
                tpu.push(j);
            } else if option == "num_processes" {
                processes.extend(if takes_value { j..j + 2 } else { j..j + 1 });
            } else if option == "multi_gpu" {
                multi = true;
            } else if option == "config_file" {
                // `--config_file F` or `--config_file=F`: the words naming it, and F.
                let file = match self.word(j).split_once('=') {
                    Some((_, file)) => file.to_string(),
                    None => self.word(j + 1).to_string(),
                };
                config = Some((j, if takes_value { j + 1 } else { j }, file));
            }
            j += if takes_value { 2 } else { 1 };
        }
        // The TPU flags select torch_xla's launcher; so does a config of the run that says
        // `distributed_type: XLA` (TPU922 makes it `MULTI_GPU`, which needs the same launch).
        let words = &self.cmd().words;
        let at = match (tpu.first(), &config) {
            (Some(&first), _) => words[first],
            // `--multi_gpu`: already accelerate's torchrun launcher (this rule's fix, run before).
            (None, Some((from, to, file)))
                if !multi && self.found.run.is_some_and(|r| r.is_accelerate_xla_config(file)) =>
            {
                TextRange::new(words[*from].start(), words[*to].end())
            }
            _ => return,
        };
        let blocked = if tpu.iter().any(|&t| name(self.word(t)).ends_with("cluster")) {
            Some("a pod launch (`--tpu_cluster`) runs on every host: start the command there".to_string())
        } else if self.region.place == Place::Quoted {
            Some("it is inside a quoted command".to_string())
        } else {
            blocker.map(|wrapper| format!("`{wrapper}` would not pass on the variables `eval` exports"))
        };
        let fix = match blocked {
            Some(why) => Err(why),
            None => self.accelerate_fix(k, tpu.into_iter().chain(processes)),
        };
        self.found.launcher(Builtin::AccelerateLaunch, at, Some(fix));
    }

    /// The rule's fix for `accelerate launch` at word `k`: the `removed` words go, the options
    /// of the template's last line follow `launch`, and the lines before it precede the command.
    fn accelerate_fix(&self, k: usize, removed: impl Iterator<Item = usize>) -> Result<Fix, String> {
        let (safety, prelude, launcher) = self.template(Builtin::AccelerateLaunch)?;
        let options =
            launcher.strip_prefix("accelerate launch").ok_or("the rule's fix is not an `accelerate launch`")?;
        let words = &self.cmd().words;
        // Each word goes with the blanks before it.
        let mut edits: Vec<Edit> =
            removed.map(|j| Edit::delete(TextRange::new(words[j - 1].end(), words[j].end()))).collect();
        edits.push(Edit::insert(words[k + 1].end(), options));
        edits.push(self.prelude(&prelude));
        Ok(fix(safety, edits))
    }

    fn pip(&mut self, k: usize) {
        let words = &self.cmd().words;
        let command = TextRange::new(words[k].start(), words[words.len() - 1].end());
        self.found.pip_install(command);
    }

    /// `python -m pip install`, and torch_xla's launchers.
    fn python(&mut self, k: usize, blocker: Option<&str>) {
        let mut j = k + 1;
        while self.word(j).starts_with('-') && self.word(j) != "-m" {
            j += 1;
        }
        let options = (j > k + 1).then(|| {
            self.found.text[TextRange::new(self.cmd().words[k + 1].start(), self.cmd().words[j - 1].end())].to_string()
        });
        let (module, script) = if self.word(j) == "-m" { (self.word(j + 1), j + 2) } else { ("", j) };
        match module {
            "pip" if self.word(j + 2) == "install" => self.pip(k),
            "torch_xla.distributed.xla_dist" => {
                let at = TextRange::new(self.cmd().words[k].start(), self.cmd().words[j + 1].end());
                self.found.launcher(Builtin::XlaDist, at, None);
            }
            "torch_xla.distributed.xla_multiprocessing" => self.spawn(k, script, options, blocker),
            "" if self.word(j).rsplit('/').next() == Some("xla_spawn.py") => self.spawn(k, j + 1, options, blocker),
            // `python train.py` of an SPMD program: TorchTPU runs one process per chip.
            "" if self.found.run.is_some_and(|r| r.is_spmd_program(self.word(j))) => {
                self.spmd_launch(k, j, options, blocker)
            }
            _ => {}
        }
    }

    /// `python [options] script` (the interpreter at word `k`, the script at `script`) of an SPMD
    /// program: the interpreter's words become torchrun, after the rule's prelude.
    fn spmd_launch(&mut self, k: usize, script: usize, options: Option<String>, blocker: Option<&str>) {
        let words = &self.cmd().words;
        let at = TextRange::new(words[k].start(), words[script - 1].end());
        let fix = match self.torchrun_blocked(options, blocker) {
            Some(why) => Err(why),
            None => self.torchrun(Builtin::SpmdLaunch, at),
        };
        self.found.launcher(Builtin::SpmdLaunch, at, Some(fix));
    }

    /// A single-host launcher at word `k` whose own options start at `first`: its words before
    /// the training script become `torchrun`, after the rule's prelude.
    fn spawn(&mut self, k: usize, first: usize, options: Option<String>, blocker: Option<&str>) {
        let len = self.cmd().words.len();
        let mut j = first;
        let mut unknown = None;
        while j < len && self.word(j).starts_with('-') {
            match self.word(j) {
                "--num_cores" => j += 2,
                w if w.starts_with("--num_cores=") => j += 1,
                w => {
                    unknown.get_or_insert(w.to_string());
                    j += 1;
                }
            }
        }
        let words = &self.cmd().words;
        let end = words[j.min(len) - 1].end();
        let at = TextRange::new(words[k].start(), end);
        let blocked = self
            .torchrun_blocked(options, blocker)
            .or_else(|| unknown.map(|option| format!("the launcher option `{option}` has no torchrun equivalent")))
            .or_else(|| (j >= len).then(|| "no training script follows the launcher".to_string()));
        let fix = match blocked {
            Some(why) => Err(why),
            None => self.torchrun(Builtin::XlaSpawn, at),
        };
        self.found.launcher(Builtin::XlaSpawn, at, Some(fix));
    }

    /// Why the current command cannot become TorchTPU's launch (the topology `eval`, then
    /// torchrun in place of its interpreter `options` or launcher), if it cannot.
    fn torchrun_blocked(&self, options: Option<String>, blocker: Option<&str>) -> Option<String> {
        if self.region.place == Place::Quoted {
            Some("it is inside a quoted command".to_string())
        } else if let Some(wrapper) = blocker {
            Some(format!("`{wrapper}` would not pass on the variables `eval` exports"))
        } else if let Some(options) = options {
            Some(format!("torchrun takes no interpreter options (`{options}`)"))
        } else if self.cmd().before.0 == Op::Pipe {
            Some("the command reads from a pipe".to_string())
        } else {
            None
        }
    }

    /// The `builtin` rule's fix: the words `at` become its template's last line, and the lines
    /// before it go before the command.
    fn torchrun(&self, builtin: Builtin, at: TextRange) -> Result<Fix, String> {
        let (safety, prelude, launcher) = self.template(builtin)?;
        Ok(fix(safety, vec![self.prelude(&prelude), Edit::replace(at, launcher)]))
    }

    /// A launcher rule's statement template, split into the lines that go before the command
    /// and its last line.
    fn template(&self, builtin: Builtin) -> Result<(Safety, String, String), String> {
        let (spec, lines) = self.found.rules.literal_fix(builtin)?;
        let (prelude, launcher) = lines.rsplit_once('\n').unwrap_or(("", lines));
        Ok((spec.safety, prelude.to_string(), launcher.to_string()))
    }

    /// `prelude`'s lines before the current command: on their own lines in a script, else
    /// joined to it by `&&`.
    fn prelude(&self, prelude: &str) -> Edit {
        let text = self.found.text;
        let start: usize = self.cmd().extent().start().into();
        let line = line_start(text, start);
        let own_line = self.region.place == Place::Script && text[line..start].trim().is_empty();
        let before: String =
            prelude
                .lines()
                .map(|l| {
                    if own_line { format!("{l}{}{}", newline_of(text), &text[line..start]) } else { format!("{l} && ") }
                })
                .collect();
        Edit::insert(super::findings::offset(start), before)
    }

    /// `len` bytes of word `k`, `skip` bytes into it: a variable's name.
    fn name_at(&self, k: usize, skip: usize, len: usize) -> TextRange {
        let start = usize::from(self.cmd().words[k].start()) + skip;
        range(start, start + len)
    }

    /// Report the variable named at `name`, set by the words `words`.
    fn env_site(&mut self, words: Range<usize>, name: TextRange) {
        let removal = self.remove_words(words);
        self.found.env(EnvSite { name, removal });
    }

    /// Delete some words of the command, or the whole command if nothing useful is left.
    fn remove_words(&self, remove: Range<usize>) -> Result<Edit, &'static str> {
        if self.region.place == Place::Written {
            return Err("it is written into a file by `echo`: delete that line if it only sets this variable");
        }
        let cmd = self.cmd();
        let left: Vec<&str> = (0..cmd.words.len()).filter(|k| !remove.contains(k)).map(|k| self.word(k)).collect();
        let useful = match left.split_first() {
            None => false,
            Some((first, rest)) => {
                !(matches!(*first, "export" | "env" | "declare" | "typeset") && rest.iter().all(|w| w.starts_with('-')))
            }
        };
        if useful {
            let first = cmd.tokens.iter().position(|t| *t == cmd.words[remove.start]).unwrap_or_default();
            let last = cmd.tokens.iter().position(|t| *t == cmd.words[remove.end - 1]).unwrap_or(first);
            return Ok(Edit::delete(span(&cmd.tokens, first, last)));
        }
        self.remove_command()
    }

    fn remove_command(&self) -> Result<Edit, &'static str> {
        let (cmd, text) = (self.cmd(), self.found.text);
        let extent = cmd.extent();
        let closed = cmd.after.0 == Op::Close || self.cmds.get(self.ci + 1).is_some_and(|c| c.closes);
        if cmd.opens && closed {
            return Ok(Edit::replace(extent, ":")); // a block must keep a command
        }
        match self.region.place {
            Place::Whole(whole) if self.cmds.len() == 1 => return Ok(Edit::delete(whole)),
            Place::Script => {
                let (start, end) = (usize::from(extent.start()), usize::from(extent.end()));
                let (line, line_end) = (line_start(text, start), line_end_inclusive(text, end));
                let rest = text[end..line_end].trim_start_matches([' ', '\t', ';']).trim();
                if text[line..start].trim().is_empty() && (rest.is_empty() || rest.starts_with('#')) {
                    return Ok(Edit::delete(range(line, line_end)));
                }
            }
            _ => {}
        }
        if matches!(cmd.after.0, Op::Semi | Op::And) {
            // Through the blanks and continuations after the operator: the next command moves up.
            let mut lx = Lexer { text, bytes: text.as_bytes(), at: cmd.after.1.end().into(), end: text.len() };
            lx.skip_blanks();
            return Ok(Edit::delete(range(extent.start().into(), lx.at)));
        }
        let prev = self.ci.checked_sub(1).map(|p| &self.cmds[p]);
        if let Some(prev) = prev.filter(|p| matches!(cmd.before.0, Op::Semi | Op::And) && p.after.1 == cmd.before.1) {
            return Ok(Edit::delete(TextRange::new(prev.extent().end(), extent.end())));
        }
        Err("the command is part of a pipeline or a condition")
    }
}

/// The text that deleting `tokens[first..=last]` removes: with the blanks after them, or before
/// them at the end of the command.
pub(super) fn span(tokens: &[TextRange], first: usize, last: usize) -> TextRange {
    match (tokens.get(last + 1), first.checked_sub(1)) {
        (Some(next), _) => TextRange::new(tokens[first].start(), next.start()),
        (None, Some(prev)) => TextRange::new(tokens[prev].end(), tokens[last].end()),
        (None, None) => TextRange::new(tokens[first].start(), tokens[last].end()),
    }
}

/// `NAME` of a word `NAME=value` (the name unquoted, as the shell requires).
pub(super) fn assigned_name(word: &str) -> Option<&str> {
    let (name, _) = word.split_once('=')?;
    is_name(name).then_some(name)
}

fn is_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn is_python(program: &str) -> bool {
    program.strip_prefix("python").is_some_and(|v| v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

fn is_pip(program: &str) -> bool {
    program.strip_prefix("pip").is_some_and(|v| v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

/// The here-documents a shell line opens (`<<EOF`, `<<-'END'`, `<< "X"`; not `<<<`), in order:
/// (delimiter, whether leading tabs are stripped before comparing).
pub fn heredoc_delimiters(line: &str) -> Vec<(String, bool)> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("<<") {
        let mut after = &rest[i + 2..];
        if let Some(herestring) = after.strip_prefix('<') {
            rest = herestring;
            continue;
        }
        let strip_tabs = after.starts_with('-');
        after = after.trim_start_matches('-').trim_start_matches([' ', '\t']);
        let word_end = after
            .find(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&' | '<' | '>' | ')'))
            .unwrap_or(after.len());
        let delimiter: String = after[..word_end].chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect();
        if !delimiter.is_empty() {
            found.push((delimiter, strip_tabs));
        }
        rest = &after[word_end..];
    }
    found
}
