//! A minimal W3C WebDriver client over HTTP: enough to open a page, fill a form, click, read text
//! and take screenshots in headless Chromium (chromedriver) or Firefox (geckodriver). Waiting is
//! done by WebDriver's implicit wait and by polling the page's own state with a deadline, never
//! by fixed sleeps.

use anyhow::{anyhow, bail, Context};
use base64::Engine;
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which browser to drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Browser {
    Chromium,
    Firefox,
}

impl Browser {
    pub fn name(self) -> &'static str {
        match self {
            Self::Chromium => "chromium",
            Self::Firefox => "firefox",
        }
    }
}

/// The element key of the W3C protocol.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A running WebDriver server with one browser session; both end when this is dropped.
pub struct Session {
    driver: Child,
    base: String,
    id: String,
    agent: ureq::Agent,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// geckodriver from `GECKODRIVER`, else from PATH, else from cargo's bin folder (where
/// `cargo xtask setup` installs it, and which a fresh shell may not have on PATH).
fn geckodriver_path() -> anyhow::Result<std::path::PathBuf> {
    let from_env = std::env::var_os("GECKODRIVER").map(std::path::PathBuf::from);
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join("geckodriver")).collect::<Vec<_>>())
        .unwrap_or_default();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cargo")));
    from_env
        .into_iter()
        .chain(on_path)
        .chain(cargo_home.map(|h| h.join("bin/geckodriver")))
        .find(|p| p.is_file())
        .context("geckodriver is not installed: run `cargo xtask setup`")
}

impl Session {
    /// Starts the WebDriver server for `browser` and opens a headless session.
    pub fn start(browser: Browser) -> anyhow::Result<Self> {
        let port = free_port();
        let (program, args) = match browser {
            Browser::Chromium => ("/usr/bin/chromedriver".into(), vec![format!("--port={port}")]),
            Browser::Firefox => (geckodriver_path()?, vec!["--port".into(), port.to_string()]),
        };
        let driver = Command::new(&program)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {} (run `cargo xtask setup`)", program.display()))?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        let base = format!("http://127.0.0.1:{port}");
        // The driver is ready when its status says so; poll it with a deadline.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = agent
                .get(format!("{base}/status"))
                .call()
                .ok()
                .and_then(|r| r.into_body().read_json::<Value>().ok())
                .is_some_and(|v| v["value"]["ready"] == json!(true));
            if ready {
                break;
            }
            if Instant::now() > deadline {
                bail!("{} did not become ready within 30 s", browser.name());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let caps = match browser {
            Browser::Chromium => json!({
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": "/usr/bin/chromium",
                    "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                             "--disable-quic", "--no-first-run", "--disable-background-networking",
                             "--disable-component-update", "--disable-sync", "--window-size=1280,900"]
                }
            }),
            Browser::Firefox => json!({
                "browserName": "firefox",
                "moz:firefoxOptions": { "binary": "/usr/bin/firefox-esr", "args": ["-headless", "-width", "1280", "-height", "900"] }
            }),
        };
        let mut session = Self { driver, base, id: String::new(), agent };
        let created = session.post_raw("/session", &json!({"capabilities": {"alwaysMatch": caps}}))?;
        session.id = created["sessionId"].as_str().context("no sessionId in the new-session answer")?.to_owned();
        session.post("/timeouts", &json!({"implicit": 15000, "pageLoad": 60000, "script": 30000}))?;
        Ok(session)
    }

    fn post_raw(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let response = self
            .agent
            .post(format!("{}{path}", self.base))
            .send_json(body)
            .with_context(|| format!("WebDriver POST {path}"))?;
        let status = response.status().as_u16();
        let value: Value = response.into_body().read_json()?;
        if status >= 400 {
            bail!("WebDriver POST {path} answered {status}: {}", value["value"]["message"]);
        }
        Ok(value["value"].clone())
    }

    fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        self.post_raw(&format!("/session/{}{path}", self.id), body)
    }

    fn get(&self, path: &str) -> anyhow::Result<Value> {
        let response = self.agent.get(format!("{}/session/{}{path}", self.base, self.id)).call()?;
        let status = response.status().as_u16();
        let value: Value = response.into_body().read_json()?;
        if status >= 400 {
            bail!("WebDriver GET {path} answered {status}: {}", value["value"]["message"]);
        }
        Ok(value["value"].clone())
    }

    pub fn goto(&self, url: &str) -> anyhow::Result<()> {
        self.post("/url", &json!({"url": url})).map(|_| ())
    }

    /// Finds one element by CSS selector, waiting up to the implicit timeout for it to appear.
    pub fn find(&self, css: &str) -> anyhow::Result<String> {
        let v = self.post("/element", &json!({"using": "css selector", "value": css})).with_context(|| format!("no element `{css}`"))?;
        v[ELEMENT].as_str().map(str::to_owned).ok_or_else(|| anyhow!("no element id for `{css}` in {v}"))
    }

    pub fn find_all(&self, css: &str) -> anyhow::Result<Vec<String>> {
        let v = self.post("/elements", &json!({"using": "css selector", "value": css}))?;
        Ok(v.as_array().into_iter().flatten().filter_map(|e| e[ELEMENT].as_str().map(str::to_owned)).collect())
    }

    pub fn text(&self, element: &str) -> anyhow::Result<String> {
        Ok(self.get(&format!("/element/{element}/text"))?.as_str().unwrap_or_default().to_owned())
    }

    pub fn clear(&self, element: &str) -> anyhow::Result<()> {
        self.post(&format!("/element/{element}/clear"), &json!({})).map(|_| ())
    }

    pub fn type_into(&self, css: &str, text: &str) -> anyhow::Result<()> {
        let el = self.find(css)?;
        self.clear(&el)?;
        self.post(&format!("/element/{el}/value"), &json!({"text": text})).map(|_| ())
    }

    pub fn click(&self, css: &str) -> anyhow::Result<()> {
        let el = self.find(css)?;
        self.post(&format!("/element/{el}/click"), &json!({})).map(|_| ())
    }

    /// Runs a script in the page and returns its result.
    pub fn script(&self, script: &str) -> anyhow::Result<Value> {
        self.post("/execute/sync", &json!({"script": script, "args": []}))
    }

    /// Waits until `condition` (a JavaScript expression) is truthy; `what` names it in the error.
    pub fn wait_for(&self, condition: &str, what: &str, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        let script = format!("return !!({condition});");
        loop {
            if self.script(&script)? == json!(true) {
                return Ok(());
            }
            if Instant::now() > deadline {
                let body = self.script("return document.body.innerText;").unwrap_or_default();
                bail!("timed out waiting for {what}; the page shows:\n{}", body.as_str().unwrap_or_default());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sets a control's value the way typing does, firing `input` and `change` (WebDriver's clear
    /// fires neither in every browser, so an emptied field would not be noticed). Panics when no
    /// element matches.
    pub fn set_value(&self, css: &str, value: &str) {
        let script = format!(
            "const e = document.querySelector({css}); if (!e) return false; e.value = {value};
             e.dispatchEvent(new Event('input', {{bubbles: true}})); e.dispatchEvent(new Event('change', {{bubbles: true}})); return true;",
            css = Value::from(css),
            value = Value::from(value),
        );
        assert_eq!(self.script(&script).unwrap(), json!(true), "no control `{css}`");
    }

    /// The rendered text of the first element matching `css`, or "" when none does (without
    /// waiting, unlike [`Session::find`]).
    pub fn text_of(&self, css: &str) -> String {
        let v = self
            .script(&format!("const e = document.querySelector({}); return e ? e.innerText : null;", Value::from(css)))
            .unwrap();
        v.as_str().unwrap_or_default().to_owned()
    }

    /// Clicks the first element matching `css` from script (reaches elements scrolled out of view
    /// in every browser). Panics when no element matches.
    pub fn click_js(&self, css: &str) {
        let ok = self
            .script(&format!("const e = document.querySelector({}); if (!e) return false; e.click(); return true;", Value::from(css)))
            .unwrap();
        assert_eq!(ok, json!(true), "no element `{css}` to click");
    }

    /// The browser's Back button.
    pub fn back(&self) -> anyhow::Result<()> {
        self.post("/back", &json!({})).map(|_| ())
    }

    /// The browser's Forward button.
    pub fn forward(&self) -> anyhow::Result<()> {
        self.post("/forward", &json!({})).map(|_| ())
    }

    /// Reloads the page, as the user's F5 does.
    pub fn refresh(&self) -> anyhow::Result<()> {
        self.post("/refresh", &json!({})).map(|_| ())
    }

    /// Resizes the browser window and returns the page's width once the page has seen the new
    /// size (it arrives a moment after the command answers in some browsers). The browser may
    /// grant another size than asked: headless Firefox keeps windows at least 500 px wide.
    pub fn set_window_size(&self, width: u32, height: u32) -> anyhow::Result<u32> {
        let granted = self.post("/window/rect", &json!({"width": width, "height": height}))?;
        let granted = granted["width"].as_u64().unwrap_or(u64::from(width));
        self.wait_for(&format!("Math.abs(window.innerWidth - {granted}) <= 20"), &format!("the window to be {granted} px wide"), Duration::from_secs(10))?;
        Ok(self.script("return window.innerWidth;")?.as_u64().unwrap_or_default() as u32)
    }

    /// Presses and releases one key (a WebDriver key code such as `"\u{E00C}"`, Escape) in
    /// whatever element has focus, as a user's keyboard does.
    pub fn press_key(&self, key: &str) -> anyhow::Result<()> {
        let actions = json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
            {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}
        ]}]});
        self.post("/actions", &actions).map(|_| ())
    }

    /// Puts a file `name` with `content` into the file input `css`, as a user picking it would,
    /// and fires `change`. (WebDriver's file upload needs a path on the browser's machine; a
    /// `DataTransfer` works the same in every browser.)
    pub fn pick_file(&self, css: &str, name: &str, content: &str) {
        let script = format!(
            "const dt = new DataTransfer(); dt.items.add(new File([{content}], {name}));
             const input = document.querySelector({css}); input.files = dt.files;
             input.dispatchEvent(new Event('change', {{bubbles: true}})); return true;",
            content = Value::from(content),
            name = Value::from(name),
            css = Value::from(css),
        );
        self.script(&script).unwrap();
    }

    /// Panics when the page is wider than the window (it would scroll sideways), naming the
    /// elements that reach past the window's right edge, and `what` was on screen.
    pub fn assert_no_sideways_scroll(&self, what: &str) {
        let widths = self.script("return [document.documentElement.scrollWidth, window.innerWidth];").unwrap();
        let (scroll, inner) = (widths[0].as_i64().unwrap(), widths[1].as_i64().unwrap());
        if scroll > inner {
            let culprits = self
                .script(
                    "return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
                       .slice(0, 8).map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right));",
                )
                .unwrap();
            panic!("{what}: the page is {scroll} px wide in a {inner} px window; too wide: {culprits}");
        }
    }

    pub fn screenshot(&self, path: &std::path::Path) -> anyhow::Result<()> {
        let data = self.get("/screenshot")?;
        let png = base64::engine::general_purpose::STANDARD.decode(data.as_str().unwrap_or_default())?;
        std::fs::write(path, png)?;
        Ok(())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.id.is_empty() {
            let _ = self.agent.delete(format!("{}/session/{}", self.base, self.id)).call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
