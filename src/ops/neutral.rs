//! Device-neutral requirements. A profile traced on CPU records CPU-specific kernel choices
//! (e.g. `_scaled_dot_product_flash_attention_for_cpu`) tagged `"neutral": "sdpa"`; each backend
//! says, in `rules/backends/<backend>.neutral.yaml`, which ops that requirement becomes there.
use std::collections::BTreeMap;

use anyhow::bail;
use serde::Deserialize;

const FORMAT: &str = "xla2tpu-neutral/1";

#[derive(Clone, Debug, Default, Deserialize)]
pub struct NeutralMap {
    #[serde(default)]
    format: String,
    #[serde(default)]
    requirements: BTreeMap<String, Resolution>,
    /// Backward op → forward op the backend differentiates itself (an Autograd<key> kernel), so
    /// the backward the CPU recorded is never called on this backend.
    #[serde(default)]
    own_backward: BTreeMap<String, String>,
}

/// What one requirement resolves to on a backend.
#[derive(Clone, Debug, Deserialize)]
pub struct Resolution {
    /// Ops the backend dispatches instead; all must be supported.
    pub ops: Vec<String>,
    /// Why this resolution (for `ops show` and the README; not repeated in every report).
    #[serde(default)]
    pub why: String,
    /// Caveat added to the notes of every evaluation that uses this requirement.
    #[serde(default)]
    pub note: Option<String>,
}

impl NeutralMap {
    pub fn parse(yaml: &str) -> anyhow::Result<NeutralMap> {
        let map: NeutralMap = yaml_serde::from_str(yaml)?;
        if map.format != FORMAT {
            bail!("unsupported neutral-requirement format {:?} (this build reads {FORMAT})", map.format);
        }
        Ok(map)
    }

    pub fn get(&self, requirement: &str) -> Option<&Resolution> {
        self.requirements.get(requirement)
    }

    /// The forward op whose own autograd kernel makes `backward_op` unnecessary here, if any.
    pub fn own_backward(&self, backward_op: &str) -> Option<&str> {
        self.own_backward.get(backward_op).map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Resolution)> {
        self.requirements.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// The requirement a CPU-specific kernel stands for, by the tracer's naming table
/// (corpus/ops/README.md, "Device-neutral names"). The tracer tags op records with it; inner-op
/// lists carry bare names, so the evaluator applies the same table to them.
pub fn cpu_requirement(op: &str) -> Option<String> {
    let short = op.strip_prefix("aten::")?;
    let base = short.split('.').next().unwrap_or(short);
    let backward = base.ends_with("_backward");
    let name = match base {
        "mkldnn_rnn_layer" => "rnn",
        "mkldnn_rnn_layer_backward" => "rnn_backward",
        "_weight_int4pack_mm_for_cpu" | "_dyn_quant_matmul_4bit" => "weight_int4pack_mm",
        "_convert_weight_to_int4pack_for_cpu" => "convert_weight_to_int4pack",
        "_flash_attention_forward" | "_efficient_attention_forward" => "sdpa",
        "_flash_attention_backward" | "_efficient_attention_backward" => "sdpa_backward",
        b if b.starts_with("_scaled_dot_product_") => {
            if backward {
                "sdpa_backward"
            } else {
                "sdpa"
            }
        }
        b if ["_nnpack_", "_slow_conv", "slow_conv"].iter().any(|p| b.starts_with(p)) => {
            if backward {
                "convolution_backward"
            } else {
                "convolution"
            }
        }
        b => {
            if let Some(rest) = b.strip_prefix("mkldnn_").or_else(|| b.strip_prefix("_mkldnn_")) {
                return Some(rest.to_string());
            }
            return b.contains("_for_cpu").then(|| b.replace("_for_cpu", "").trim_start_matches('_').to_string());
        }
    };
    Some(name.to_string())
}
