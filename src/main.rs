fn main() -> std::process::ExitCode {
    xla2tpu::cli::main()
}
