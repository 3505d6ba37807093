//! pgoforge: makes MySQL-family servers faster with feedback-directed optimization, and proves it.

mod cli;

fn main() {
    // Die quietly on a closed pipe (`pgoforge recipes | head`), as Unix tools do, instead of panicking.
    // SAFETY: setting a signal disposition before any threads exist.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let code = match cli::main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            cli::exit_status(&e).code()
        }
    };
    std::process::exit(code);
}
