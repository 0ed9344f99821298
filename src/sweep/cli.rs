use std::process::ExitCode;
#[derive(Debug, clap::Args)]
pub struct SweepArgs {}
pub fn run(_args: SweepArgs) -> anyhow::Result<ExitCode> { anyhow::bail!("not implemented yet") }
