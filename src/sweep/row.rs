//! One model's row of the sweep: who it is and every verdict it got.
use serde::Serialize;

use super::execution::ExecVerdict;
use super::verdict::ModelVerdict;

/// One model's result.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRow {
    /// 1-based position in the (download-sorted) list.
    pub rank: usize,
    pub id: String,
    pub downloads: u64,
    pub model_type: Option<String>,
    /// How `model_type` was resolved from the id when the list had none (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_type_from_id: Option<String>,
    pub library: Option<String>,
    pub pipeline_tag: Option<String>,
    pub arch: String,
    /// Profiles that stand for the model (empty when unknown or n/a).
    pub profiles: Vec<String>,
    /// How the resolution was reached when not directly (PEFT base, diffusers components).
    pub note: Option<String>,
    #[serde(flatten)]
    pub result: ModelVerdict,
    /// The same model on the `--compare` backend.
    pub compare: Option<ModelVerdict>,
    /// The same model in bf16 under TorchTPU's autocast (its bf16-autocast profiles).
    pub bf16: Option<ModelVerdict>,
    /// The verdict comes from the model's own config (per-config profile, `--exact`), not its type.
    pub exact: bool,
    /// Its profiled types' runs on the emulated TorchTPU, float32 (absent for n/a models or
    /// without execution profiles).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<ExecVerdict>,
    /// The same runs under bf16 autocast.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_bf16: Option<ExecVerdict>,
}
