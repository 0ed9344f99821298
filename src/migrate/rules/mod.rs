//! Rules are data: `rules/*.yaml` say what each torch_xla / optimum-tpu API
//! becomes. The schema is documented in `rules/README.md`; this module loads
//! and validates it. The shipped rule files are embedded in the binary.

pub mod template;

use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::{Context, bail};
use serde::Deserialize;

use template::{Signature, Template};

/// Rule files shipped with xla2tpu (embedded so the binary is self-contained).
static EMBEDDED: include_dir::Dir = include_dir::include_dir!("$CARGO_MANIFEST_DIR/rules");

pub use crate::migrate::fix::Safety;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    #[serde(default)]
    rules: Vec<RawRule>,
    /// Module-level helpers any rule's fix may `define` by name (`define: {name: ~}`), whichever
    /// file it is in: every file's helpers are known before any rule is read.
    #[serde(default)]
    helpers: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    code: String,
    name: String,
    #[serde(rename = "match")]
    matcher: RawMatcher,
    #[serde(default)]
    signature: Option<String>,
    message: String,
    help: String,
    #[serde(default)]
    fix: Vec<RawFix>,
    explanation: String,
    /// What works differently once the fix is applied, on purpose (the migration report says it).
    #[serde(default)]
    changes: Option<String>,
    /// The TorchTPU releases the rule applies to (a PEP 440 specifier); all when absent.
    #[serde(default)]
    torchtpu: Option<String>,
    /// Off unless a selector names the rule's family or the rule (`TPU75`, `TPU751`): advice
    /// about speed, not about code that fails, is asked for, as ruff's preview rules are.
    #[serde(default)]
    opt_in: bool,
}

/// A list of qualified names, or a map from qualified name to a `{target}` value (`~`: none,
/// so a fix using `{$target}` does not apply to that name).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Names {
    List(Vec<String>),
    Map(BTreeMap<String, Option<String>>),
}

impl Default for Names {
    fn default() -> Self {
        Names::List(Vec::new())
    }
}

impl Names {
    fn into_pairs(self) -> Vec<(String, Option<String>)> {
        match self {
            Names::List(v) => v.into_iter().map(|n| (n, None)).collect(),
            Names::Map(m) => m.into_iter().collect(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatcher {
    #[serde(default)]
    call: Names,
    #[serde(default)]
    with: Names,
    #[serde(default)]
    reference: Names,
    /// Variable names, or a map from name to the variable that replaces it.
    #[serde(default)]
    env: Names,
    #[serde(default)]
    device_string: Option<DeviceString>,
    #[serde(default)]
    string: Option<StringMatch>,
    #[serde(default)]
    dict_key: Vec<String>,
    /// Method names distinctive enough to match on any receiver (`pipe.enable_xla_flash_attention()`:
    /// a library's torch_xla switch on an object whose type the file does not name).
    #[serde(default)]
    method: Vec<String>,
    /// (method rules) Match only in files that call one of these qualified names, or define one
    /// of these helpers (a name without a module: what a fix turned such a call into): a method
    /// too common to match alone (`loss.backward()`) matters where they are used.
    #[serde(default)]
    in_files_calling: Vec<String>,
    /// (method rules) Match only on a bare name last assigned a call to one of these (qualified
    /// names, or helpers as in `in_files_calling`): `model.state_dict()` of the model FSDPv2
    /// wrapped, not of the optimizer beside it.
    #[serde(default)]
    receiver_from: Vec<String>,
    #[serde(default)]
    builtin: Option<Builtin>,
    #[serde(default)]
    modules: Vec<String>,
    /// (import rules) Modules imported for a side effect, and the rule whose remaining
    /// findings still rely on it: such an import stays while one of them is left.
    #[serde(default)]
    side_effects: BTreeMap<String, String>,
    #[serde(default)]
    when: When,
    /// Alternatives: the call matches if any of these holds (and `when` does).
    #[serde(default)]
    when_any: Vec<When>,
    /// The call is a torch_xla availability probe: names assigned from it are
    /// flags whose branches the probe's fix retargets to TorchTPU.
    #[serde(default)]
    probe: bool,
    /// (reference rules on a class) Match only the uses that may create an instance: not a
    /// class test (`isinstance`), an annotation, or the argument of a helper the fix defines.
    #[serde(default)]
    instances: bool,
}

/// String literals with one of `values`: fixed to `to` where they are the
/// value of one of `keywords` (`backend="openxla"`), reported elsewhere.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StringMatch {
    pub values: Vec<String>,
    #[serde(default)]
    pub to: Option<String>,
    #[serde(default)]
    pub keywords: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceString {
    pub from: String,
    pub to: String,
}

/// Rules whose matching is code, not a name list; their texts are still data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Builtin {
    /// An import of one of `modules` (fixable once nothing references it).
    Import,
    /// A reference to one of `modules` that no other rule covers.
    Unmapped,
    /// A branch guarded by a torch_xla availability test (dead on TorchTPU).
    XlaOnlyBranch,
    /// A PyTorch API call whose forward needs an op the backend lacks.
    ApiOps,
    /// A PyTorch API call whose backward (only) needs an op the backend lacks.
    ApiOpsBackward,
    /// A file that does not parse (`check` reports it as a finding).
    SyntaxError,
    /// A `# noqa` code that suppresses nothing.
    UnusedNoqa,
    /// A file that runs torch_xla on hardware other than a TPU (Neuron, Tenstorrent, CUDA).
    OtherHardware,
    /// `softmax`/`log_softmax` in a torch_xla autocast region, which ran them in float32.
    AutocastSoftmax,
    /// `.view()` of a slice or transpose: torch_xla tensors had no strides (TPU720).
    StridedView,
    // Files other than Python (src/migrate/project); each handler adds its own below.
    // deps (TPU90x–TPU91x):
    /// A torch_xla requirement (TPU901).
    DepTorchXla,
    /// A libtpu / libtpu-nightly / cloud-tpu-client requirement (TPU902).
    DepLibtpu,
    /// A find-links or index URL of the old TPU wheel buckets (TPU903).
    DepTpuIndex,
    /// A torch requirement the target release cannot install with (TPU904).
    DepTorchPin,
    /// torchvision / torchaudio pinned for the old torch (TPU905).
    DepTorchCompanion,
    /// An optimum-tpu requirement (TPU906).
    DepOptimumTpu,
    /// `jax[tpu]` next to torch_xla / torch-tpu (TPU907).
    DepJaxTpu,
    /// A Python requirement below the target's (TPU908).
    DepPython,
    /// accelerate pinned below the release that finds the `tpu` device (TPU910).
    DepAcceleratePin,
    /// transformers pinned below the release whose Trainer runs on the `tpu` device (TPU911).
    DepTransformersPin,
    /// A Dockerfile based on a PyTorch/XLA image, torch_xla preinstalled (TPU909).
    XlaBaseImage,
    // launch (TPU92x–TPU93x):
    /// `python -m torch_xla.distributed.xla_dist`: the XRT pod launcher.
    XlaDist,
    /// `python xla_spawn.py`, `python -m torch_xla.distributed.xla_multiprocessing`: one process per core.
    XlaSpawn,
    /// `python train.py` of a script of the run that calls `xr.use_spmd()`: one process for every chip.
    SpmdLaunch,
    /// `xr.use_spmd()` in a run with no launch script starting an SPMD program (a Python file's
    /// finding, in the Launch work: the migrated program must be started one process per chip).
    SpmdUnlaunched,
    /// A value computed from a sharded batch, read (`.item()`, printed) before it is made global.
    SpmdSliceRead,
    /// An accelerate config file with `distributed_type: XLA` (or `TPU`).
    AccelerateConfig,
    /// `accelerate launch --tpu` and the other TPU flags.
    AccelerateLaunch,
    /// A Lightning CLI config with `trainer: {accelerator: tpu}` or an XLA strategy.
    LightningConfig,
    // performance (TPU75x, opt-in; src/migrate/checker/performance.rs):
    /// A host sync (`.item()`, printing the loss, `.cpu()`) in every step of a training loop.
    SyncInTrainingLoop,
    /// A `mark_step` ending a training step in a file that compiles nothing.
    EagerStep,
    /// Python control flow on a tensor's value in a module's `forward`.
    TensorBranch,
    /// An op whose output shape depends on the data, in a module's `forward`.
    DynamicShape,
    /// A `DataLoader` without `drop_last=True` in a file that compiles.
    LoaderDropLast,
}

impl Builtin {
    /// The opt-in performance rules (TPU75x): analysed only where one is selected.
    pub fn is_performance(self) -> bool {
        matches!(
            self,
            Builtin::SyncInTrainingLoop
                | Builtin::EagerStep
                | Builtin::TensorBranch
                | Builtin::DynamicShape
                | Builtin::LoaderDropLast
        )
    }
}

/// Argument conditions: parameter → accepted source texts (`~` = not passed).
pub type When = BTreeMap<String, Vec<Option<String>>>;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFix {
    safety: Safety,
    #[serde(default)]
    when: When,
    #[serde(default)]
    drop: Vec<String>,
    #[serde(default)]
    replace: Option<String>,
    #[serde(default)]
    statement: Option<String>,
    #[serde(default)]
    delete: bool,
    #[serde(default)]
    unwrap: bool,
    #[serde(default)]
    iterate_loader: Option<RawIterateLoader>,
    #[serde(default)]
    args: Option<RawArgsFix>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    requires_call_in_function: Vec<String>,
    #[serde(default)]
    requires_call_in_file: Vec<String>,
    #[serde(default)]
    unless_call_in_file: Vec<String>,
    #[serde(default)]
    names: Vec<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    requires_process_group: bool,
    #[serde(default)]
    requires_group_in_file: bool,
    #[serde(default)]
    requires_group_joined: bool,
    #[serde(default)]
    requires_result: bool,
    #[serde(default)]
    requires_global_reads: bool,
    #[serde(default)]
    rank_branch: Vec<RankBranch>,
    #[serde(default)]
    compare: BTreeMap<String, Option<String>>,
    #[serde(default)]
    worker_prelude: Option<RawPrelude>,
    /// Name → definition, or `~` for a rule file's shared `helpers:` entry of that name.
    #[serde(default)]
    define: BTreeMap<String, Option<String>>,
    #[serde(default)]
    requires_argument_of: Vec<String>,
    #[serde(default)]
    map: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default)]
    only_shown: bool,
    #[serde(default)]
    before_clock_read: bool,
}

/// Statements to put at the top of the worker function a launcher call names, unless the
/// worker's own top-level statements create the process group.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrelude {
    /// The parameter holding the worker function (e.g. `fn`).
    param: String,
    statement: String,
}

#[derive(Debug, Clone)]
pub struct WorkerPrelude {
    pub param: String,
    pub statement: Template,
}

/// Where a match sits with respect to branches only some ranks take (`if xm.is_master_ordinal():`,
/// `if rank == 0:`): a collective there would wait for ranks that never reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankBranch {
    /// In no enclosing `if` of its function whose test reads a rank.
    Outside,
    /// In the body of `if xm.is_master_ordinal():` or `if xm.get_local_ordinal() == 0:` (the
    /// local master), its innermost branch on a rank.
    LocalMaster,
    /// In the body of `if xm.is_master_ordinal(local=False):` or `if xm.get_ordinal() == 0:`
    /// (the global master, also its host's local master), its innermost branch on a rank.
    GlobalMaster,
    /// In another branch whose test reads a rank.
    Inside,
}

/// `iterate_loader: {loader: PARAM, device: PARAM}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIterateLoader {
    loader: String,
    device: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArgsFix {
    /// The function called instead (a helper taking the same arguments).
    #[serde(default)]
    callee: Option<String>,
    #[serde(default)]
    set: BTreeMap<String, String>,
    #[serde(default)]
    remove: Vec<String>,
    /// Keywords given a new name where they are written (`evaluation_strategy=` → `eval_strategy=`).
    #[serde(default)]
    rename: BTreeMap<String, String>,
    /// An expression whose mapping is appended as keywords: `**TEXT`.
    #[serde(default)]
    splat: Option<String>,
}

/// What a fix does with the matched code.
#[derive(Debug, Clone)]
pub enum FixAction {
    /// Replace the matched expression.
    Replace(Template),
    /// Replace the whole expression statement (may span several lines).
    Statement(Template),
    /// Delete the statement (an expression statement, or an assignment to the match).
    Delete,
    /// Replace a `with` statement by its body.
    Unwrap,
    /// Edit arguments in place: set values (adding keywords), remove arguments, rename keywords
    /// where they are written, and append `**splat` (keywords computed at run time); `callee`
    /// calls another function with them.
    Args {
        callee: Option<Template>,
        set: Vec<(String, Template)>,
        remove: Vec<String>,
        rename: Vec<(String, String)>,
        splat: Option<Template>,
    },
    /// A device loader becomes its plain loader, and every loop over it moves
    /// each batch to the device (code-driven: see `checker/loaders.rs`).
    IterateLoader { loader: String, device: String },
}

#[derive(Debug, Clone)]
pub struct FixSpec {
    pub safety: Safety,
    pub when: When,
    pub drop: Vec<String>,
    pub action: FixAction,
    pub note: Option<String>,
    /// Only offer the fix when the function containing the match also calls
    /// one of these (e.g. wraps a model in DDP).
    pub requires_call_in_function: Vec<String>,
    /// Only offer the fix in files that call one of these.
    pub requires_call_in_file: Vec<String>,
    /// Never offer the fix in files that call one of these (qualified names; `M.*` for any
    /// name under module M).
    pub unless_call_in_file: Vec<String>,
    /// (rules on several names) The variant applies to calls of these names only; for the
    /// others it does not exist (no "not converted" reason).
    pub names: Vec<String>,
    /// (with `names`) The signature those names are called with, when it is not the rule's.
    pub signature: Option<Signature>,
    /// Only offer the fix (a collective) where a process group can exist on the match's
    /// path: see [`crate::migrate::facts`].
    pub requires_process_group: bool,
    /// Only offer the fix (an unguarded collective) in a file that creates the process group
    /// itself: `init_process_group`, or a launcher of a worker defined in it.
    pub requires_group_in_file: bool,
    /// Only offer the fix where this process has certainly joined the process group: after
    /// `init_process_group` on the match's path, or in a worker a converted launcher starts
    /// (and the functions only called there). Ranks there are the group's.
    pub requires_group_joined: bool,
    /// Only offer the fix where the call's value is used (assigned or returned).
    pub requires_result: bool,
    /// Only offer the fix (a batch split) in a file that reads no value computed from a split
    /// batch before making it global (TPU234): split, each process would read its slice's.
    pub requires_global_reads: bool,
    /// Only offer the fix where the match sits in one of these kinds of branch (see
    /// [`RankBranch`]); empty: anywhere.
    pub rank_branch: Vec<RankBranch>,
    /// When the match is compared with string literals (`hw == "TPU"`), each
    /// literal's new value, or `None` for a value the new API never returns (the literal
    /// stays: the comparison is simply false); a literal not listed blocks the fix.
    pub compare: BTreeMap<String, Option<String>>,
    pub worker_prelude: Option<WorkerPrelude>,
    /// Module-level helpers the fix's code may call, by the name each defines: the ones its
    /// edits (or other used helpers) name are put once below the file's imports. For APIs
    /// that have no PyTorch counterpart but are plain Python (`xm.RateTracker`).
    pub define: Vec<(String, Template)>,
    /// Only offer the fix where the match is passed straight to a call of one of these
    /// modules (`torch.distributed`): a value whose type changes must not flow elsewhere.
    pub requires_argument_of: Vec<String>,
    /// Per parameter, what a string literal passed there becomes (`"sum"` →
    /// `dist.ReduceOp.SUM`); a literal not listed makes the fix unavailable.
    pub map: BTreeMap<String, BTreeMap<String, Template>>,
    /// Only offer the fix where the match's value is only shown to a person: an argument of
    /// `print` or of a logger call, or a field of an f-string (or `%`/`.format`) shown there.
    pub only_shown: bool,
    /// Only offer the fix (a statement) where the program reads a clock right after it: the
    /// next statement of its block, or the one after the loop whose body it ends (timing code).
    pub before_clock_read: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchKind {
    Call,
    With,
    Reference,
}

#[derive(Debug, Clone)]
pub struct Rule {
    pub code: String,
    pub name: String,
    pub signature: Option<Signature>,
    pub message: String,
    pub help: String,
    pub explanation: String,
    /// What works differently once the fix is applied (the report's "What behaves differently").
    pub changes: Option<String>,
    pub fixes: Vec<FixSpec>,
    pub when: When,
    pub when_any: Vec<When>,
    /// What a call this rule matches must contain, by its condition: see [`call_needles`].
    pub needles: Option<Vec<String>>,
    pub probe: bool,
    /// See `RawMatcher::instances`.
    pub instances: bool,
    pub env: Vec<String>,
    /// Variables with a TorchTPU equivalent: name → the equivalent's name.
    pub env_renames: BTreeMap<String, String>,
    pub device_string: Option<DeviceString>,
    pub string: Option<StringMatch>,
    pub dict_keys: Vec<String>,
    pub methods: Vec<String>,
    /// See `RawMatcher::in_files_calling`.
    pub in_files_calling: Vec<String>,
    /// See `RawMatcher::receiver_from`.
    pub receiver_from: Vec<String>,
    pub builtin: Option<Builtin>,
    pub modules: Vec<String>,
    /// (import rules) module imported for a side effect → the code of the rule relying on it.
    pub side_effects: BTreeMap<String, String>,
    /// Where the rule came from (file name), for error messages.
    pub origin: String,
    /// The TorchTPU releases the rule applies to (`torchtpu: ">=0.2.0"`); `None` = all.
    pub torchtpu: Option<pep440_rs::VersionSpecifiers>,
    /// See `RawRule::opt_in`.
    pub opt_in: bool,
}

pub use crate::migrate::diagnostic::RuleId;

/// The words without which no rule can match a file ([`RuleSet::may_match`]).
#[derive(Debug)]
struct Prefilter {
    /// Words that alone let some rule match: `xla`, the modules migrated away from,
    /// environment variables, strings and keys rules look for.
    words: aho_corasick::AhoCorasick,
    /// `noqa` in any case: a directive matters (TPU003) only when its line lists a code of ours.
    noqa: aho_corasick::AhoCorasick,
    /// The letters of the loaded rules' codes (`TPU`, or an organisation's own).
    families: Vec<String>,
    /// The same, searched first: most files hold none, and need no `noqa` search.
    any_family: aho_corasick::AhoCorasick,
    /// Identifiers that let a rule match when the module they come from is imported too: a
    /// segment of each name rules match under another root (`GradScaler` of
    /// `torch.amp.GradScaler`), and the last segment of every API the backend cannot run
    /// (`median` of `torch.median` and `Tensor.median`, for TPU8xx).
    leads: FxHashMap<String, Vec<Lead>>,
    /// All the leads' roots: a file that imports none of them needs no identifier scan.
    roots: Vec<String>,
    /// The same, searched first: most files do not even mention one.
    any_root: aho_corasick::AhoCorasick,
}

/// What else a file needs for a lead identifier to let a rule match in it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Lead {
    /// The first segment of the name (`torch`): only an import binds it.
    root: String,
    /// What every matching call contains ([`call_needles`]), when all the name's rules are such.
    needles: Option<Vec<String>>,
}

/// Builtins and everyday words: a lead only when called as an attribute (`torch.range(`,
/// `x.mode(`), since `for i in range(n)` is in every file.
const CALLED_ONLY: [&str; 2] = ["range", "mode"];

impl Prefilter {
    fn new(rules: &RuleSet) -> Prefilter {
        let root = |name: &str| name.split('.').next().unwrap_or(name).to_string();
        // The modules being migrated away from: naming one is enough.
        let sources: BTreeSet<String> = rules.rules.iter().flat_map(|r| r.modules.iter().map(|m| root(m))).collect();
        let mut words: BTreeSet<String> = ["xla", "tpu_available"].map(String::from).into();
        words.extend(sources.iter().cloned());
        for r in &rules.rules {
            // A method matched only beside other names needs theirs: their roots are sources,
            // and a defined helper's name (the migrated form) is a word of its own.
            let methods = r.methods.iter().filter(|_| r.in_files_calling.is_empty());
            words.extend(r.in_files_calling.iter().filter(|n| !n.contains('.')).cloned());
            let strings =
                r.env.iter().chain(&r.dict_keys).chain(methods).chain(r.string.iter().flat_map(|m| &m.values));
            words.extend(strings.chain(r.device_string.iter().map(|d| &d.from)).filter(|w| !w.is_empty()).cloned());
        }
        // Not identifiers of ours: also UPPER and Title case (`_XLA_AVAILABLE`, `Xla…`).
        for w in ["xla", "tpu_available"] {
            words.extend([w.to_ascii_uppercase(), w[..1].to_ascii_uppercase() + &w[1..]]);
        }
        // A word containing another (`XLA_FLAGS` ⊃ `XLA`) adds nothing; a few dozen literals
        // take the SIMD (Teddy) search, several times faster than an automaton over every byte.
        let minimal: Vec<&String> =
            words.iter().filter(|w| !words.iter().any(|o| o != *w && w.contains(o.as_str()))).collect();
        // A needle holding one of them is found by the word search already.
        let found_by_words = |needle: &String| minimal.iter().any(|w| needle.contains(w.as_str()));

        let mut leads: BTreeMap<String, BTreeSet<Lead>> = BTreeMap::new();
        let named = rules.names.iter().map(|(name, entries)| (name, needles_of(rules, entries)));
        for (name, needles) in named.chain(rules.members.keys().map(|module| (module, None))) {
            let (first, rest) = name.split_once('.').unwrap_or((name, name));
            if sources.contains(first) || needles.as_ref().is_some_and(|n| n.iter().all(found_by_words)) {
                continue;
            }
            // Every segment of a name is written in a file that uses it (as an attribute, an
            // imported name or a star-imported use); the rarest is the best lead: `tpu` in
            // `torch.tpu.device`, else the longest.
            let segments: Vec<&str> = rest.split('.').collect();
            let lead = segments.iter().find(|s| **s == "tpu").or_else(|| segments.iter().max_by_key(|s| s.len()));
            let lead = lead.unwrap_or(&rest).to_string();
            leads.entry(lead).or_default().insert(Lead { root: first.to_string(), needles });
        }
        let api_rules =
            rules.rules.iter().any(|r| matches!(r.builtin, Some(Builtin::ApiOps | Builtin::ApiOpsBackward)));
        if let Some(table) = rules.api_ops.as_ref().filter(|_| api_rules) {
            for api in table.reportable() {
                let last = api.rsplit('.').next().unwrap_or(api);
                // A keyword value the call must pass, as the checker reads it: one plain literal.
                let quoted = |v: &String| [format!("\"{v}\""), format!("'{v}'")];
                let needles = table.needles(api).map(|values| values.iter().flat_map(quoted).collect());
                leads.entry(last.to_string()).or_default().insert(Lead { root: "torch".into(), needles });
            }
        }
        let roots: BTreeSet<&String> = leads.values().flatten().map(|l| &l.root).collect();
        let roots: Vec<String> = roots.into_iter().cloned().collect();
        let any_root = literals(&roots);
        let leads = leads.into_iter().map(|(lead, of)| (lead, of.into_iter().collect())).collect();
        let words = literals(&minimal);
        let noqa = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(["noqa"])
            .expect("a literal needle always builds");
        let families: BTreeSet<&str> = rules.rules.iter().map(|r| code_family(&r.code)).collect();
        let families: Vec<String> = families.into_iter().filter(|f| !f.is_empty()).map(String::from).collect();
        let any_family = literals(&families);
        Prefilter { words, noqa, families, any_family, leads, roots, any_root }
    }

    fn may_match(&self, text: &str) -> bool {
        if self.words.is_match(text) {
            return true;
        }
        // `# noqa: F401` is another linter's business; `# noqa: TPU110` may be unused (TPU003).
        let ours = |line: &str| self.families.iter().any(|f| line.contains(f.as_str()));
        if self.any_family.is_match(text)
            && self.noqa.find_iter(text).any(|m| ours(text[m.end()..].lines().next().unwrap_or_default()))
        {
            return true;
        }
        self.any_root.is_match(text) && self.a_lead_is_used(text)
    }

    /// Whether a lead is written where a program can use it, with its root and needles in the
    /// file: as an attribute (`torch.cross`, `x.cross`), or imported (`from torch import
    /// cross`; with `*`, anywhere), not in prose (`# cross attention`) or as an unrelated local.
    /// Attributes are found from their dots (a SIMD byte search), not by stepping an automaton
    /// through every byte of the file.
    fn a_lead_is_used<'p>(&'p self, text: &str) -> bool {
        let bytes = text.as_bytes();
        // A name resolves under its root only where an import binds the root.
        let imported = Imported::of(text);
        if !self.roots.iter().any(|root| imported.names.contains(root.as_str())) {
            return false;
        }
        let mut present: FxHashMap<&'p str, bool> = FxHashMap::default();
        let mut in_file = |needle: &'p str| {
            *present.entry(needle).or_insert_with(|| memchr::memmem::find(bytes, needle.as_bytes()).is_some())
        };
        let mut usable = |word: &str| {
            self.leads.get(word).is_some_and(|leads| {
                leads.iter().any(|l| {
                    imported.names.contains(l.root.as_str())
                        && l.needles.as_ref().is_none_or(|needles| needles.iter().any(|n| in_file(n.as_str())))
                })
            })
        };
        // The ASCII identifier at a byte offset (empty, and not sliced, inside a UTF-8 sequence).
        let identifier_at = |start: usize| match bytes[start..].iter().take_while(|&&b| IDENT[usize::from(b)]).count() {
            0 => "",
            len => &text[start..start + len],
        };
        for dot in memchr::memchr_iter(b'.', bytes) {
            let start = dot + 1 + bytes[dot + 1..].iter().take_while(|b| b.is_ascii_whitespace()).count();
            let word = identifier_at(start);
            let called = || text[start + word.len()..].trim_start_matches([' ', '\t']).starts_with('(');
            if !word.is_empty() && (!CALLED_ONLY.contains(&word) || called()) && usable(word) {
                return true;
            }
        }
        if imported.star {
            // `from torch import *`: any identifier of the file may be a lead.
            let mut at = 0;
            while at < bytes.len() {
                let word = identifier_at(at);
                if word.is_empty() {
                    at += 1;
                    continue;
                }
                if !CALLED_ONLY.contains(&word) && usable(word) {
                    return true;
                }
                at += word.len();
            }
            return false;
        }
        // A lead bound by an import (`from torch import cross as product`) is used by its alias.
        imported.names.iter().any(|word| !CALLED_ONLY.contains(word) && usable(word))
    }
}

/// What every call of a name needs ([`call_needles`]): only when each rule naming it matches
/// calls alone and has some; a `with` or a reference needs none.
fn needles_of(rules: &RuleSet, entries: &[NameEntry]) -> Option<Vec<String>> {
    let mut needles = Vec::new();
    for (kind, id, _) in entries {
        if *kind != MatchKind::Call {
            return None;
        }
        needles.extend(rules.rules[*id].needles.clone()?);
    }
    Some(needles)
}

/// The names import statements may bind in a file, read from its bytes: every identifier after
/// an `import` keyword up to the statement's end (a parenthesised list may hold comments, and a
/// backslash continues a line), and the first after a `from` (the module's root, `torch` of
/// `from torch.nn import functional`). Over-approximate by design: `import` and `from` in prose
/// count too.
struct Imported<'a> {
    names: FxHashSet<&'a str>,
    star: bool,
}

impl<'a> Imported<'a> {
    fn of(text: &'a str) -> Imported<'a> {
        let bytes = text.as_bytes();
        let mut imported = Imported { names: FxHashSet::default(), star: false };
        let ident = |i: usize| IDENT[usize::from(bytes[i])];
        // A backslash before the line's end (`\n` or `\r\n`) continues the statement.
        let continued = |i: usize| bytes[..i].strip_suffix(b"\r").unwrap_or(&bytes[..i]).ends_with(b"\\");
        // A keyword, not part of an identifier (`from_pretrained`, `reimport`).
        let word = |at: usize, len: usize| crate::source::is_whole_word(bytes, at, len);
        for at in memchr::memmem::find_iter(bytes, b"from").filter(|&at| word(at, 4)) {
            let mut i = at + 4;
            while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'.' | b'\\' | b'\r' | b'\n') {
                i += 1;
            }
            let start = i;
            while i < bytes.len() && ident(i) {
                i += 1;
            }
            if i > start {
                imported.names.insert(&text[start..i]);
            }
        }
        for at in memchr::memmem::find_iter(bytes, b"import").filter(|&at| word(at, 6)) {
            let end = at + "import".len();
            let parenthesised = text[end..].trim_start_matches([' ', '\t']).starts_with('(');
            let (mut i, mut in_comment) = (end, false);
            while i < bytes.len() {
                match bytes[i] {
                    b'\n' if parenthesised => in_comment = false,
                    b'\n' if !continued(i) => break,
                    b'#' => in_comment = true,
                    b')' if parenthesised && !in_comment => break,
                    b'*' if !in_comment => imported.star = true,
                    b if IDENT[usize::from(b)] && !in_comment => {
                        let start = i;
                        while i < bytes.len() && ident(i) {
                            i += 1;
                        }
                        imported.names.insert(&text[start..i]);
                        continue;
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        imported
    }
}

/// ASCII identifier bytes (letters, digits, `_`): the API names and segments we look for.
static IDENT: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_';
        b += 1;
    }
    table
};

/// A searcher for a few dozen literals: leftmost-first lets aho-corasick use its SIMD (Teddy)
/// search, several times faster than an automaton stepping through every byte.
fn literals<S: AsRef<str>>(patterns: &[S]) -> aho_corasick::AhoCorasick {
    let patterns: Vec<&str> = patterns.iter().map(AsRef::as_ref).collect();
    aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostFirst)
        .build(patterns)
        .expect("literal needles always build")
}

/// How a rule matches a name, and the name's `{$target}`.
type NameEntry = (MatchKind, RuleId, Option<String>);

/// All loaded rules, indexed for matching.
#[derive(Debug, Default)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
    /// Qualified name → the rules matching it as a call, a `with` or a reference.
    names: FxHashMap<String, Vec<NameEntry>>,
    /// Module → the rules matching every name under it (`torch_xla._XLAC.*` in a rule), for
    /// modules whose members share one disposition (private bindings, removed modules).
    members: FxHashMap<String, Vec<NameEntry>>,
    /// Method name → the rule matching its calls on any receiver (looked up on every
    /// unresolved method call, so indexed rather than searched).
    methods: FxHashMap<String, RuleId>,
    /// What each PyTorch API call needs from the backend (TPU8xx rules); the
    /// backend is TorchTPU 0.2.0 unless `set_backend` picks another.
    pub api_ops: Option<std::sync::Arc<crate::ops::api::ApiOps>>,
    /// The TorchTPU release the rules assume: what dependency files are migrated to.
    pub target: crate::migrate::target::Target,
    /// Built on first use, once every rule file is loaded: see [`RuleSet::may_match`].
    prefilter: std::sync::OnceLock<Prefilter>,
    /// Shared helper definitions (rule files' `helpers:`), by name.
    helpers: BTreeMap<String, String>,
    /// The rules of each literal matcher, asked about at every string literal: a scan of every
    /// rule there was a tenth of the checker's time.
    by_kind: ByKind,
}

/// Rule ids by the literal matcher they have, and the built-in rules by their handler.
#[derive(Debug, Default)]
struct ByKind {
    env: Vec<RuleId>,
    device_string: Vec<RuleId>,
    string: Vec<RuleId>,
    dict_keys: Vec<RuleId>,
    builtins: FxHashMap<Builtin, RuleId>,
}

/// A rule code's letters, its family: `TPU` of `TPU110`.
pub fn code_family(code: &str) -> &str {
    code.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// The texts one of which every call a rule matches contains, by its condition (`when`,
/// `when_any`): an accepted value of an argument the condition requires (it matches as
/// written or as the inside of a plain string literal, so either way its text is in the file),
/// or the name of a keyword-only parameter that must be passed at all (`"*"`). `None` when a
/// call may match without any of them: no condition, or one that also accepts an omitted
/// argument, a `$kind` of value, or any value of a positional parameter.
fn call_needles(signature: Option<&Signature>, when: &When, when_any: &[When]) -> Option<Vec<String>> {
    let signature = signature?;
    let of_param = |param: &str, accepted: &[Option<String>]| -> Option<Vec<String>> {
        let keyword_only =
            || signature.params.iter().any(|p| p.name == param && p.kind == template::ParamKind::KeywordOnly);
        accepted
            .iter()
            .map(|value| match value.as_deref()? {
                "*" => keyword_only().then(|| param.to_string()),
                v if v.starts_with('$') || v.is_empty() => None,
                v => Some(v.to_string()),
            })
            .collect()
    };
    // Every parameter of a `when` must match: the one with the fewest needles is the best.
    let of_when = |when: &When| when.iter().filter_map(|(p, accepted)| of_param(p, accepted)).min_by_key(Vec::len);
    if let Some(needles) = of_when(when) {
        return Some(needles);
    }
    // One of the alternatives must hold: all of theirs.
    if when_any.is_empty() {
        return None;
    }
    let alternatives: Option<Vec<Vec<String>>> = when_any.iter().map(of_when).collect();
    let mut needles: Vec<String> = alternatives?.concat();
    needles.sort();
    needles.dedup();
    Some(needles)
}

/// Whether `text` calls `name` (`name(` as a whole word, not an attribute: `datetime.now(` is
/// no call of a helper `now`): what a fix's code or a helper calls.
pub(crate) fn calls(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
        !before.is_some_and(ident) && text[at + name.len()..].trim_start().starts_with('(')
    })
}

fn parse_rule_file(origin: &str, text: &str) -> anyhow::Result<RuleFile> {
    yaml_serde::from_str(text).with_context(|| format!("invalid rule file {origin}"))
}

impl RuleSet {
    /// The embedded rules plus the `*.yaml` files of the given directories, in order.
    pub fn load(extra: &[PathBuf]) -> anyhow::Result<RuleSet> {
        Self::load_for(extra, crate::migrate::target::DEFAULT_TARGET)
    }

    /// [`RuleSet::load`] for a TorchTPU release (`--target-version`): rules whose `torchtpu`
    /// range excludes it are left out. An unknown release is an error naming the known ones.
    pub fn load_for(extra: &[PathBuf], target: &str) -> anyhow::Result<RuleSet> {
        let mut set = RuleSet { target: crate::migrate::target::Target::load(target)?, ..RuleSet::default() };
        let mut files: Vec<_> =
            EMBEDDED.files().filter(|f| f.path().extension().is_some_and(|e| e == "yaml")).collect();
        files.sort_by_key(|f| f.path());
        let mut sources = Vec::new();
        for file in files {
            let text = file.contents_utf8().context("rule file is not UTF-8")?;
            sources.push((file.path().display().to_string(), text.to_string()));
        }
        for dir in extra {
            let mut paths: Vec<_> = std::fs::read_dir(dir)
                .with_context(|| format!("cannot read rules directory {}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
                .collect();
            paths.sort();
            for path in paths {
                let text =
                    crate::source::read_text(&path).with_context(|| format!("cannot read {}", path.display()))?;
                sources.push((path.display().to_string(), text));
            }
        }
        let files = sources.iter().map(|(origin, text)| Ok((origin, parse_rule_file(origin, text)?)));
        let files: Vec<(&String, RuleFile)> = files.collect::<anyhow::Result<_>>()?;
        for (origin, file) in &files {
            set.add_helpers(origin, &file.helpers)?;
        }
        for (origin, file) in files {
            set.add_rules(origin, file.rules)?;
        }
        set.set_backend(crate::ops::DEFAULT_BACKEND)?;
        Ok(set)
    }

    /// Judge PyTorch API calls against this backend (a built-in name such as
    /// `torch_xla-2.9`, or a registry file): the same table `ops` and the
    /// emulator read.
    pub fn set_backend(&mut self, backend: &str) -> anyhow::Result<()> {
        if self.builtin(Builtin::ApiOps).is_some() || self.builtin(Builtin::ApiOpsBackward).is_some() {
            self.api_ops = Some(std::sync::Arc::new(crate::ops::api::load(backend)?));
        }
        self.prefilter = std::sync::OnceLock::new(); // what TPU8xx can report depends on the backend
        Ok(())
    }

    /// The shared `helpers:` of a rule file; a name defined twice must mean the same text.
    fn add_helpers(&mut self, origin: &str, helpers: &BTreeMap<String, String>) -> anyhow::Result<()> {
        for (name, text) in helpers {
            match self.helpers.get(name) {
                Some(other) if other != text => bail!("{origin}: helper `{name}` is defined differently elsewhere"),
                _ => {
                    self.helpers.insert(name.clone(), text.clone());
                }
            }
        }
        Ok(())
    }

    /// One more rule file (its helpers, then its rules).
    pub fn add_file(&mut self, origin: &str, text: &str) -> anyhow::Result<()> {
        let file = parse_rule_file(origin, text)?;
        self.add_helpers(origin, &file.helpers)?;
        self.add_rules(origin, file.rules)
    }

    fn add_rules(&mut self, origin: &str, rules: Vec<RawRule>) -> anyhow::Result<()> {
        for raw in rules {
            let code = raw.code.clone();
            self.add(origin, raw).with_context(|| format!("{origin}: rule {code}"))?;
        }
        Ok(())
    }

    fn add(&mut self, origin: &str, raw: RawRule) -> anyhow::Result<()> {
        if !is_rule_code(&raw.code) {
            bail!("rule codes look like TPU123 (three letters, three digits)");
        }
        if let Some(other) = self.rules.iter().find(|r| r.code == raw.code) {
            bail!("duplicate rule code (also in {})", other.origin);
        }
        let torchtpu = raw
            .torchtpu
            .as_deref()
            .map(|range| range.parse::<pep440_rs::VersionSpecifiers>().with_context(|| format!("torchtpu: `{range}`")))
            .transpose()?;
        let target: pep440_rs::Version = self.target.version.parse()?;
        if torchtpu.as_ref().is_some_and(|range| !range.contains(&target)) {
            return Ok(());
        }
        let signature = raw.signature.as_deref().map(Signature::parse).transpose()?;
        let mut fixes = Vec::new();
        for f in raw.fix {
            fixes.push(convert_fix(f, signature.as_ref(), &self.helpers)?);
        }
        let id = self.rules.len();
        let m = raw.matcher;
        let env_pairs = m.env.into_pairs();
        let env_renames = env_pairs.iter().filter_map(|(n, t)| Some((n.clone(), t.clone()?))).collect();
        for method in &m.method {
            if let Some(other) = self.methods.insert(method.clone(), id) {
                bail!("method `{method}` is already matched by {}", self.rules[other].code);
            }
        }
        for (kind, names) in [(MatchKind::Call, m.call), (MatchKind::With, m.with), (MatchKind::Reference, m.reference)]
        {
            for (name, target) in names.into_pairs() {
                let entries = match name.strip_suffix(".*") {
                    Some(module) => self.members.entry(module.to_string()).or_default(),
                    None => self.names.entry(name.clone()).or_default(),
                };
                if let Some((_, other, _)) = entries.iter().find(|(k, _, _)| *k == kind) {
                    bail!("`{name}` is already matched by {}", self.rules[*other].code);
                }
                entries.push((kind, id, target));
            }
        }
        let needles = call_needles(signature.as_ref(), &m.when, &m.when_any);
        let k = &mut self.by_kind;
        for (has, ids) in [
            (!env_pairs.is_empty(), &mut k.env),
            (m.device_string.is_some(), &mut k.device_string),
            (m.string.is_some(), &mut k.string),
            (!m.dict_key.is_empty(), &mut k.dict_keys),
        ] {
            if has {
                ids.push(id);
            }
        }
        if let Some(b) = m.builtin {
            k.builtins.entry(b).or_insert(id);
        }
        self.rules.push(Rule {
            code: raw.code,
            name: raw.name,
            signature,
            message: raw.message,
            help: raw.help,
            explanation: raw.explanation,
            changes: raw.changes,
            fixes,
            needles,
            when: m.when,
            when_any: m.when_any,
            probe: m.probe,
            instances: m.instances,
            env: env_pairs.into_iter().map(|(n, _)| n).collect(),
            env_renames,
            device_string: m.device_string,
            string: m.string,
            dict_keys: m.dict_key,
            methods: m.method,
            in_files_calling: m.in_files_calling,
            receiver_from: m.receiver_from,
            builtin: m.builtin,
            modules: m.modules,
            side_effects: m.side_effects,
            origin: origin.to_string(),
            torchtpu,
            opt_in: raw.opt_in,
        });
        Ok(())
    }

    /// Whether any rule could match in `text`. Every matcher needs some word in the file: the
    /// root module of a name it matches (only an import binds it), an environment variable, a
    /// string or key value, `xla` (availability guards and device strings), `noqa` (unused
    /// directives); TPU8xx need `torch` and the name of an API the backend cannot run. Most of a
    /// large tree has none of them, and its files need no semantic model, nor a parse unless
    /// every file's syntax errors are asked for (TPU002 named).
    pub fn may_match(&self, text: &str) -> bool {
        let prefilter = self.prefilter();
        crate::timings::time(crate::timings::Phase::Prefilter, || prefilter.may_match(text))
    }

    fn prefilter(&self) -> &Prefilter {
        self.prefilter.get_or_init(|| Prefilter::new(self))
    }

    /// Whether `code` has the letters of a loaded rule's code (`TPU`, or an organisation's own):
    /// a `# noqa` code that is ours even when no rule has it.
    pub fn is_our_family(&self, code: &str) -> bool {
        self.prefilter().families.iter().any(|f| f == code_family(code))
    }

    /// The rule matching `qualified` in this position, with its `{target}`: the rule naming it,
    /// else the rule for the innermost module (`a.b.*`) it is a member of.
    pub fn lookup(&self, kind: MatchKind, qualified: &str) -> Option<(RuleId, Option<&str>)> {
        fn of_kind(entries: &[NameEntry], kind: MatchKind) -> Option<(RuleId, Option<&str>)> {
            entries.iter().find(|(k, _, _)| *k == kind).map(|(_, id, t)| (*id, t.as_deref()))
        }
        if let Some(found) = self.names.get(qualified).and_then(|e| of_kind(e, kind)) {
            return Some(found);
        }
        if self.members.is_empty() {
            return None;
        }
        qualified
            .rmatch_indices('.')
            .find_map(|(dot, _)| self.members.get(&qualified[..dot]).and_then(|e| of_kind(e, kind)))
    }

    /// Any rule that names `qualified` whatever a call of it passes (used to report indirect
    /// references: `f = torch.compile` shows no arguments, so a call rule whose condition needs
    /// some, TPU121's `backend="openxla"`, cannot be judged there and is not reported).
    pub fn lookup_any(&self, qualified: &str) -> Option<RuleId> {
        [MatchKind::Call, MatchKind::With, MatchKind::Reference].into_iter().find_map(|k| {
            let (id, _) = self.lookup(k, qualified)?;
            (k != MatchKind::Call || self.rules[id].needles.is_none()).then_some(id)
        })
    }

    /// Whether `name` is one of the rule files' shared `helpers:`.
    pub fn is_shared_helper(&self, name: &str) -> bool {
        self.helpers.contains_key(name)
    }

    pub fn builtin(&self, builtin: Builtin) -> Option<RuleId> {
        self.by_kind.builtins.get(&builtin).copied()
    }

    /// A code-driven rule's fix text (launchers, configs: a `replace:` or `statement:` without
    /// placeholders, which the handler places itself), with its fix variant.
    pub fn literal_fix(&self, builtin: Builtin) -> Result<(&FixSpec, &str), String> {
        let spec = self.builtin(builtin).and_then(|id| self.rules[id].fixes.first());
        let spec = spec.ok_or("the rule declares no fix")?;
        let (FixAction::Replace(template) | FixAction::Statement(template)) = &spec.action else {
            return Err("the rule's fix is not a replacement".into());
        };
        let text = template.as_literal().ok_or("the rule's fix has placeholders")?;
        Ok((spec, text))
    }

    fn with_ids<'s>(&'s self, ids: &'s [RuleId]) -> impl Iterator<Item = (RuleId, &'s Rule)> {
        ids.iter().map(|&id| (id, &self.rules[id]))
    }

    pub fn env_rules(&self) -> impl Iterator<Item = (RuleId, &Rule)> {
        self.with_ids(&self.by_kind.env)
    }

    pub fn device_string_rules(&self) -> impl Iterator<Item = (RuleId, &Rule)> {
        self.with_ids(&self.by_kind.device_string)
    }

    pub fn string_rules(&self) -> impl Iterator<Item = (RuleId, &Rule)> {
        self.with_ids(&self.by_kind.string)
    }

    /// The rule matching a call of the method `name` on any receiver.
    pub fn method_rule(&self, name: &str) -> Option<RuleId> {
        self.methods.get(name).copied()
    }

    pub fn dict_key_rules(&self) -> impl Iterator<Item = (RuleId, &Rule)> {
        self.with_ids(&self.by_kind.dict_keys)
    }

    pub fn by_code(&self, code: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.code.eq_ignore_ascii_case(code))
    }
}

fn is_rule_code(code: &str) -> bool {
    code.len() == 6
        && code[..3].chars().all(|c| c.is_ascii_uppercase())
        && code[3..].chars().all(|c| c.is_ascii_digit())
}

fn convert_fix(
    f: RawFix,
    signature: Option<&Signature>,
    helpers: &BTreeMap<String, String>,
) -> anyhow::Result<FixSpec> {
    let mut actions = Vec::new();
    if let Some(t) = f.replace {
        actions.push(FixAction::Replace(Template::parse(&t)?));
    }
    if let Some(t) = f.statement {
        actions.push(FixAction::Statement(Template::parse(&t)?));
    }
    if f.delete {
        actions.push(FixAction::Delete);
    }
    if f.unwrap {
        actions.push(FixAction::Unwrap);
    }
    if let Some(l) = f.iterate_loader {
        actions.push(FixAction::IterateLoader { loader: l.loader, device: l.device });
    }
    if let Some(args) = f.args {
        let set =
            args.set.into_iter().map(|(k, v)| Ok((k, Template::parse(&v)?))).collect::<anyhow::Result<Vec<_>>>()?;
        let splat = args.splat.as_deref().map(Template::parse).transpose()?;
        let callee = args.callee.as_deref().map(Template::parse).transpose()?;
        let rename = args.rename.into_iter().collect();
        actions.push(FixAction::Args { callee, set, remove: args.remove, rename, splat });
    }
    if actions.len() != 1 {
        bail!("a fix needs exactly one of replace, statement, delete, unwrap, args, iterate_loader");
    }
    let action = actions.pop().expect("one action");
    let own_signature = f.signature.as_deref().map(Signature::parse).transpose()?;
    if own_signature.is_some() && f.names.is_empty() {
        bail!("a fix's own `signature` needs the `names` it is the signature of");
    }
    let signature = own_signature.as_ref().or(signature);
    // Every parameter a fix names must exist in the signature.
    let mut named: Vec<&str> = f.when.keys().map(String::as_str).chain(f.drop.iter().map(String::as_str)).collect();
    if let FixAction::Args { set, remove, rename, splat, .. } = &action {
        named.extend(set.iter().map(|(k, _)| k.as_str()));
        named.extend(remove.iter().map(String::as_str));
        named.extend(rename.iter().map(|(k, _)| k.as_str()));
        named.extend(splat.iter().flat_map(Template::params));
    }
    if let FixAction::Replace(t) | FixAction::Statement(t) = &action {
        named.extend(t.params());
    }
    if let FixAction::IterateLoader { loader, device } = &action {
        named.extend([loader.as_str(), device.as_str()]);
    }
    if let Some(p) = &f.worker_prelude {
        named.push(p.param.as_str());
    }
    if let Some(unknown) = named.iter().find(|p| signature.is_none_or(|s| !s.has(p))) {
        bail!("fix refers to parameter `{unknown}`, which is not in the rule's signature");
    }
    let worker_prelude = f
        .worker_prelude
        .map(|p| Ok::<_, anyhow::Error>(WorkerPrelude { param: p.param, statement: Template::parse(&p.statement)? }))
        .transpose()?;
    let map = f
        .map
        .into_iter()
        .map(|(param, values)| {
            if signature.is_none_or(|s| !s.has(&param)) {
                bail!("map: `{param}` is not in the rule's signature");
            }
            let values = values
                .into_iter()
                .map(|(literal, to)| Ok((literal, Template::parse(&to)?)))
                .collect::<anyhow::Result<BTreeMap<_, _>>>()?;
            Ok((param, values))
        })
        .collect::<anyhow::Result<BTreeMap<_, _>>>()?;
    // A shared helper brings the shared helpers it calls (`torchtpu_training_arguments` calls
    // `accelerate_tpu_processes`): a rule names only what its own code calls.
    let mut define: Vec<(String, Option<String>)> = f.define.into_iter().collect();
    let mut next = 0;
    while next < define.len() {
        if define[next].1.is_none()
            && let Some(text) = helpers.get(&define[next].0)
        {
            for other in helpers.keys() {
                if calls(text, other) && !define.iter().any(|(n, _)| n == other) {
                    define.push((other.clone(), None));
                }
            }
        }
        next += 1;
    }
    let define = define
        .into_iter()
        .map(|(name, text)| {
            let text = match text {
                Some(text) => text,
                None => {
                    helpers.get(&name).cloned().with_context(|| format!("define `{name}`: no helper of that name"))?
                }
            };
            let defines = |kw: &str| text.lines().any(|l| l.starts_with(&format!("{kw} {name}")));
            if !defines("def") && !defines("class") {
                bail!("define `{name}`: the text must define `{name}` with a top-level `def` or `class`");
            }
            Ok((name, Template::parse(&text)?))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(FixSpec {
        safety: f.safety,
        when: f.when,
        drop: f.drop,
        action,
        note: f.note,
        requires_call_in_function: f.requires_call_in_function,
        requires_call_in_file: f.requires_call_in_file,
        unless_call_in_file: f.unless_call_in_file,
        names: f.names,
        signature: own_signature,
        requires_process_group: f.requires_process_group,
        requires_group_in_file: f.requires_group_in_file,
        requires_group_joined: f.requires_group_joined,
        requires_result: f.requires_result,
        requires_global_reads: f.requires_global_reads,
        rank_branch: f.rank_branch,
        compare: f.compare,
        worker_prelude,
        define,
        requires_argument_of: f.requires_argument_of,
        map,
        only_shown: f.only_shown,
        before_clock_read: f.before_clock_read,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE_USING_A_HELPER: &str = r#"
rules:
  - code: TST001
    name: uses-helper
    match: {call: [torch_xla.probe]}
    message: "m"
    help: "h"
    fix:
      - safety: safe
        replace: "helper()"
        define: {helper: ~}
    explanation: "e"
"#;

    #[test]
    fn a_shared_helper_is_found_in_any_rule_file_and_must_exist() {
        let mut set = RuleSet::load(&[]).expect("embedded rules load");
        // hazards.yaml is read before helpers.yaml, yet TPU712 finds the helper it defines there.
        let trainer = set.by_code("TPU712").expect("embedded");
        assert!(trainer.fixes[0].define.iter().any(|(name, _)| name == "accelerate_tpu_processes"));
        // A helpers-only file is a rule file too.
        let helpers = "helpers:\n  helper: |\n    def helper():\n        return 1\n";
        set.add_file("later.yaml", helpers).expect("helpers load");
        set.add_file("rules.yaml", RULE_USING_A_HELPER).expect("the helper resolves");
        let rule = set.by_code("TST001").expect("loaded");
        assert_eq!(rule.fixes[0].define[0].0, "helper");

        let mut set = RuleSet::load(&[]).expect("embedded rules load");
        let err = set.add_file("rules.yaml", RULE_USING_A_HELPER).expect_err("no such helper");
        assert!(format!("{err:#}").contains("no helper of that name"), "{err:#}");
        let other = "helpers:\n  accelerate_tpu_processes: |\n    def accelerate_tpu_processes():\n        return 0\n";
        let err = set.add_file("mine.yaml", other).expect_err("a second meaning");
        assert!(format!("{err:#}").contains("defined differently"), "{err:#}");
    }

    #[test]
    fn the_prefilter_passes_every_file_a_rule_can_match_and_skips_plain_python() {
        let rules = RuleSet::load(&[]).expect("embedded rules load");
        for text in [
            "import torch_xla.core.xla_model as xm\n",
            "from optimum.tpu import fsdp_v2\n",
            "import os\nos.environ['PJRT_DEVICE'] = 'TPU'\n",
            "if _XLA_AVAILABLE:\n    pass\n",
            "import torch\nx = torch.median(t)\n",
            "from torch.nn import functional as F\ny = F.interpolate(x, mode='trilinear')\n",
            "x = 1  # NOQA: TPU110\n",
            "USE_XLA = 1\n",
            "if Xla_Available:\n    pass\n",
            "d = t.to('xla:0')\n",
            "from torch import median as med\nmed(x)\n",
            "import torch as th\nth.range(0, 3)\n",
            "import torch\ndef f(x: torch.Tensor):\n    return x.mode()\n",
            "import torch\nc = torch.cross(a, b)\n",
            "import torch\nc = (a\n     .cross(b))\n",
            "from torch import (  # (sic)\n    cross,\n)\nc = cross(a, b)\n",
            "from torch import linalg, \\\n    cross as product\nc = product(a, b)\n",
            "from torch import *\nc = cross(a, b)\n",
            "import torch\nfrom lightning import Trainer\nTrainer(accelerator='tpu')\n",
            "import lightning as L\nL.Trainer(tpu_cores=8)\n",
        ] {
            assert!(rules.may_match(text), "{text:?} must be checked");
        }
        for text in [
            "import os\nprint(os.getcwd())\n",
            "def output(tpl):\n    return tpl\n",
            "import torch\nfor i in range(3):\n    model.train(mode=True)\n    x = torch.medianx(i)\n",
            "import torch\n# cross attention, then median pooling\ncross = torch.cat([a, b])\n",
            "import torch\nimport os  # noqa: F401\nx = 1  # NOQA\n",
            // No import binds `torch`: the name resolves to nothing.
            "x = torch.median(t)  # torch\n",
            // Only the trilinear shapes of `interpolate` lack a kernel.
            "import torch.nn.functional as F\ny = F.interpolate(x, mode='bilinear')\n",
            // TPU710 matches a Trainer only with a TPU accelerator, strategy or core count.
            "import torch\nfrom lightning import Trainer\nTrainer(accelerator=kind)\n",
            // TPU121 needs `backend="openxla"`, which the word `xla` finds already.
            "import torch\nmodel = torch.compile(model)\n",
        ] {
            assert!(!rules.may_match(text), "{text:?} needs no semantic model");
        }
    }
}
