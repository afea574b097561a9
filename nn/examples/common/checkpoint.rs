//! Saving and loading a model's parameters as a `safetensors` file: one little-endian f32
//! tensor per parameter, under the name the model gives it, with its row-major shape. Shared
//! by the examples (`#[path]`), each passing its model's named parameters.

use std::error::Error;
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use tessera::Runtime;
use tessera_nn::Parameter;

type BoxError = Box<dyn Error>;

/// A model's parameters, each under its name in the file.
pub type Named<'a> = Vec<(String, Parameter<'a>)>;

/// Writes every parameter of `params` to `path`, replacing the file if there is one.
pub fn save(rt: &Runtime, params: Named<'_>, path: &Path) -> Result<(), BoxError> {
    let mut tensors = Vec::new();
    for (name, param) in params {
        let values = param.value.read(rt)?;
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        tensors.push((name, param.shape, bytes));
    }
    let mut views = Vec::with_capacity(tensors.len());
    for (name, shape, data) in &tensors {
        let view = TensorView::new(Dtype::F32, shape.clone(), data)
            .map_err(|e| format!("`{name}` does not fit its shape {shape:?}: {e}"))?;
        views.push((name.as_str(), view));
    }
    let file = safetensors::serialize(views, None)
        .map_err(|e| format!("encoding the parameters for {}: {e}", path.display()))?;
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("creating the folder {}: {e}", dir.display()))?;
    }
    std::fs::write(path, file).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(())
}

/// Replaces every parameter of `params` with the tensor of the same name in `path`. Every
/// tensor must be there, as f32, with this model's shape; nothing else may be.
pub fn load(rt: &Runtime, mut params: Named<'_>, path: &Path) -> Result<(), BoxError> {
    let file = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let tensors = SafeTensors::deserialize(&file)
        .map_err(|e| format!("{} is not a safetensors file: {e}", path.display()))?;
    let extra: Vec<&str> = tensors
        .names()
        .into_iter()
        .filter(|name| !params.iter().any(|(ours, _)| ours == name))
        .collect();
    if !extra.is_empty() {
        return Err(format!(
            "{} holds tensors this network does not have: {}",
            path.display(),
            extra.join(", ")
        )
        .into());
    }
    // Check every tensor before writing any, so that a bad file changes nothing.
    let mut values = Vec::with_capacity(params.len());
    for (name, param) in &params {
        let shape = &param.shape;
        let tensor = tensors
            .tensor(name)
            .map_err(|_| format!("{} has no tensor `{name}`", path.display()))?;
        if tensor.dtype() != Dtype::F32 {
            return Err(format!(
                "`{name}` in {} is {:?}; this network's parameters are F32",
                path.display(),
                tensor.dtype()
            )
            .into());
        }
        if tensor.shape() != shape.as_slice() {
            return Err(format!(
                "`{name}` in {} has the shape {:?} but this network's has {shape:?} \
                 (was it saved with a different size, such as --large?)",
                path.display(),
                tensor.shape()
            )
            .into());
        }
        let floats: Vec<f32> = tensor
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        values.push(floats);
    }
    for ((_, param), floats) in params.iter_mut().zip(&values) {
        param.value.write(rt, floats)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_nn::{Init, Linear, LinearConfig};

    /// A file in the temporary folder, removed when dropped.
    struct TempFile(std::path::PathBuf);

    impl TempFile {
        fn new(name: &str) -> Self {
            TempFile(std::env::temp_dir().join(format!(
                "tessera-checkpoint-{}-{name}.safetensors",
                std::process::id()
            )))
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// Two layers, their parameters named `first.weight`, `first.bias`, `second.weight`, ...
    struct Model([Linear; 2]);

    impl Model {
        fn new(rt: &Runtime, widths: [u32; 3], seed: u64) -> Self {
            let layer = |i: usize| {
                let config = LinearConfig::new(widths[i], widths[i + 1]);
                let seed = seed + i as u64;
                Linear::new(rt, config.init(Init::Uniform { seed })).unwrap()
            };
            Model([layer(0), layer(1)])
        }

        fn named(&mut self) -> Named<'_> {
            let [first, second] = &mut self.0;
            let layers = [
                ("first", first.parameters()),
                ("second", second.parameters()),
            ];
            layers
                .into_iter()
                .flat_map(|(layer, ps)| ps.map(|p| (format!("{layer}.{}", p.name), p)))
                .collect()
        }

        fn bits(&mut self, rt: &Runtime) -> Vec<Vec<u32>> {
            let read = |p: &Parameter<'_>| p.value.read(rt).unwrap();
            let values = self
                .named()
                .iter()
                .map(|(_, p)| read(p))
                .collect::<Vec<_>>();
            values
                .iter()
                .map(|v| v.iter().map(|x| x.to_bits()).collect())
                .collect()
        }
    }

    #[test]
    fn saved_parameters_load_exactly() {
        let rt = Runtime::new().unwrap();
        let mut saved = Model::new(&rt, [3, 4, 2], 1);
        let file = TempFile::new("round-trip");
        save(&rt, saved.named(), &file.0).unwrap();
        let mut loaded = Model::new(&rt, [3, 4, 2], 9);
        assert_ne!(loaded.bits(&rt), saved.bits(&rt));
        load(&rt, loaded.named(), &file.0).unwrap();
        assert_eq!(loaded.bits(&rt), saved.bits(&rt));
    }

    #[test]
    fn a_shape_mismatch_or_a_missing_tensor_is_an_error_that_changes_nothing() {
        let rt = Runtime::new().unwrap();
        let file = TempFile::new("mismatch");
        save(&rt, Model::new(&rt, [3, 4, 2], 1).named(), &file.0).unwrap();

        let mut wider = Model::new(&rt, [3, 5, 2], 2);
        let before = wider.bits(&rt);
        let error = load(&rt, wider.named(), &file.0).unwrap_err().to_string();
        assert!(
            error.contains("`first.weight`") && error.contains("[3, 4]"),
            "{error}"
        );
        assert_eq!(wider.bits(&rt), before);

        // A file with one tensor of four.
        let partial = TempFile::new("partial");
        let one = [0u8; 4];
        let view = TensorView::new(Dtype::F32, vec![1], &one).unwrap();
        let bytes = safetensors::serialize([("second.bias", view)], None).unwrap();
        std::fs::write(&partial.0, bytes).unwrap();
        let mut model = Model::new(&rt, [3, 4, 1], 3);
        let error = load(&rt, model.named(), &partial.0)
            .unwrap_err()
            .to_string();
        assert!(error.contains("no tensor `first.weight`"), "{error}");

        // A tensor the model does not have.
        let mut smaller = Model::new(&rt, [3, 4, 2], 4);
        let named: Named<'_> = smaller.named().into_iter().take(3).collect();
        let error = load(&rt, named, &file.0).unwrap_err().to_string();
        assert!(error.contains("does not have: second.bias"), "{error}");

        let missing = std::env::temp_dir().join("tessera-checkpoint-no-such-file.safetensors");
        let error = load(&rt, model.named(), &missing).unwrap_err().to_string();
        assert!(error.starts_with("reading "), "{error}");
    }
}
