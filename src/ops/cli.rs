use std::process::ExitCode;
#[derive(Debug, clap::Args)]
pub struct OpsArgs {}
pub fn run(_args: OpsArgs) -> anyhow::Result<ExitCode> { anyhow::bail!("not implemented yet") }
