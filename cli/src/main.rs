//! The `kprof` command (being written).

fn main() {
    eprintln!("kprof: this command is being written");
    std::process::exit(2);
}
