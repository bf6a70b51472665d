//! A local PostgreSQL for `cargo xtask run --postgres`: a cluster from Debian's package
//! (`/usr/lib/postgresql/<version>/bin`) in `<data-dir>/postgres`, created on first use,
//! started if it is not running, with a `datadict` database. It keeps running after the server
//! stops (its stop command is printed), so the next run finds its data.

use crate::util::{run, step};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Starts (creating if needed) the local cluster and returns the server's `--database` URL.
pub fn start_local(data_dir: &Path) -> anyhow::Result<String> {
    let bin = pg_bin_dir().ok_or_else(|| anyhow::anyhow!("PostgreSQL is not installed: run `cargo xtask setup run` or apt-get install postgresql"))?;
    let port: u16 = match std::env::var("DATADICT_POSTGRES_PORT") {
        Ok(p) => p.parse().map_err(|_| anyhow::anyhow!("DATADICT_POSTGRES_PORT=`{p}` is not a port number"))?,
        Err(_) => 5433,
    };
    std::fs::create_dir_all(data_dir)?;
    let folder = std::fs::canonicalize(data_dir)?.join("postgres");
    // PostgreSQL refuses to run as root: as root, the cluster belongs to the `postgres` user.
    let root = Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0")).unwrap_or(false);
    let as_pg = |program: &str| -> Command {
        let program = bin.join(program);
        if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    };
    if !folder.join("PG_VERSION").is_file() {
        step(&format!("creating a PostgreSQL cluster in {}", folder.display()));
        std::fs::create_dir_all(&folder)?;
        if root {
            run(Command::new("chown").args(["-R", "postgres:postgres"]).arg(&folder))?;
        }
        run(as_pg("initdb").args(["-A", "trust", "-U", "postgres", "-D"]).arg(&folder))?;
    }
    let running = as_pg("pg_ctl").arg("-D").arg(&folder).arg("status").output().map(|o| o.status.success()).unwrap_or(false);
    if !running {
        step(&format!("starting PostgreSQL on 127.0.0.1:{port}"));
        let options = format!("-p {port} -k {} -c listen_addresses=127.0.0.1", folder.display());
        run(as_pg("pg_ctl").arg("-D").arg(&folder).args(["-o", &options, "-w", "-l"]).arg(folder.join("log")).arg("start"))
            .map_err(|e| e.context(format!("PostgreSQL did not start; see {}", folder.join("log").display())))?;
    }
    // `createdb` refuses an existing database, so ask first.
    let exists = as_pg("psql")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres", "-tAc", "SELECT 1 FROM pg_database WHERE datname = 'datadict'"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "1")
        .unwrap_or(false);
    if !exists {
        run(as_pg("createdb").args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres", "datadict"]))?;
    }
    let stop = if root { "runuser -u postgres -- " } else { "" };
    println!("PostgreSQL keeps running after the server stops; stop it with: {stop}{} -D {} stop", bin.join("pg_ctl").display(), folder.display());
    Ok(format!("postgres://postgres@127.0.0.1:{port}/datadict"))
}

/// The `bin` folder of the newest installed PostgreSQL.
fn pg_bin_dir() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").is_file())
        .collect();
    found.sort_by_key(|p| p.parent().and_then(|v| v.file_name()).and_then(|v| v.to_str()).and_then(|v| v.parse::<u32>().ok()));
    found.pop()
}
