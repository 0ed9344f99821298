// The rule files, backend registries, operator profiles and the emulator are embedded with
// include_dir!, which does not notice *new* files; rebuild when these trees change.
fn main() {
    println!("cargo:rerun-if-changed=rules");
    println!("cargo:rerun-if-changed=emulator/python");
    println!("cargo:rerun-if-changed=corpus/ops");
    println!("cargo:rerun-if-changed=corpus/ops-bf16");
    println!("cargo:rerun-if-changed=corpus/exec");
    println!("cargo:rerun-if-changed=corpus/models");
}
