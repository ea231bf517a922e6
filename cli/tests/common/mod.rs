//! A `mnemon serve` process for the binary's tests.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `mnemon serve` on a free loopback port, killed when dropped.
pub struct Serving {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub addr: String,
}

impl Serving {
    /// Starts `mnemon serve --addr <free port>` with `args` and waits (up to 30 s) until it listens.
    pub fn start<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Serving {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(env!("CARGO_BIN_EXE_mnemon"))
            .args(["serve", "--addr", &addr])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let serving = Serving { child, addr };
        for attempt in 0.. {
            if std::net::TcpStream::connect(&serving.addr).is_ok() {
                break;
            }
            assert!(attempt < 600, "the server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        serving
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One test running llama.cpp at a time. Its threads spin at their barriers, so two decoding
/// processes on 2 cores wait on each other and both slow down many times over (the demo took 58 s
/// beside the extract test, 11 s alone).
pub fn one_model_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static RUNNING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    RUNNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The Python of a venv holding `requirement` (`name==version`), made once per machine under the
/// cache folder (`venv-name-version`); tests on other threads wait while one makes it.
pub fn venv(requirement: &str) -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    let venv = cache.join("mnemon").join(format!("venv-{}", requirement.replace("==", "-")));
    let python = venv.join("bin").join("python");
    let ready = venv.join(".installed");
    static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _making = MAKING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready.exists() {
        let run = |cmd: &mut Command| {
            let out = cmd.output().expect("run python3");
            assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        run(Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            requirement,
        ]));
        std::fs::write(&ready, requirement).unwrap();
    }
    python
}
