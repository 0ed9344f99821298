// The rule files, backend registries and operator profiles are embedded with
// include_dir!, which does not notice *new* files; rebuild when these trees change.
fn main() {
    println!("cargo:rerun-if-changed=rules");
    println!("cargo:rerun-if-changed=corpus/ops");
    println!("cargo:rerun-if-changed=corpus/models");
}
