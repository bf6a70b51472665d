//! Saving text the app produced (exports, import reports) as a file, through a `Blob` URL: no
//! server round trip, and nothing is ever written into the page as HTML.

use wasm_bindgen::JsCast;

/// Offers `text` for download as `filename`; returns a message when the browser refuses.
pub fn download(filename: &str, mime: &str, text: &str) -> Result<(), String> {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options).map_err(|e| format!("{e:?}"))?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(|e| format!("{e:?}"))?;
    let document = web_sys::window().and_then(|w| w.document()).ok_or("no document")?;
    let anchor: web_sys::HtmlAnchorElement =
        document.create_element("a").map_err(|e| format!("{e:?}"))?.dyn_into().map_err(|_| "not an anchor".to_owned())?;
    anchor.set_href(&url);
    anchor.set_download(filename);
    anchor.click();
    let _ = web_sys::Url::revoke_object_url(&url);
    Ok(())
}
