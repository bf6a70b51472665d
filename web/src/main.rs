//! Entry point of the web app: installs the on-page panic report and mounts the app.

fn main() {
    datadict_web::start();
}
