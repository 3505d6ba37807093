//! pgoforge: makes MySQL-family servers faster with feedback-directed optimization, and proves it.

mod cli;

fn main() {
    let code = match cli::main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    };
    std::process::exit(code);
}
