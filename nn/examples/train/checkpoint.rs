//! Saving and loading the network's parameters as a `safetensors` file: one little-endian f32
//! tensor per parameter, named as [`Net::parameters`] names them, with its row-major shape.

use std::error::Error;
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use tessera::Runtime;

use crate::net::Net;

type BoxError = Box<dyn Error>;

/// Writes every parameter of `net` to `path`, replacing the file if there is one.
pub fn save(rt: &Runtime, net: &mut Net, path: &Path) -> Result<(), BoxError> {
    let mut tensors = Vec::new();
    for (name, param) in net.parameters() {
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

/// Replaces every parameter of `net` with the tensor of the same name in `path`. Every tensor
/// must be there, as f32, with this network's shape; nothing else may be.
pub fn load(rt: &Runtime, net: &mut Net, path: &Path) -> Result<(), BoxError> {
    let file = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let tensors = SafeTensors::deserialize(&file)
        .map_err(|e| format!("{} is not a safetensors file: {e}", path.display()))?;
    let mut params = net.parameters();
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
    use crate::data::{Dataset, CLASSES};
    use crate::net::NetConfig;
    use tessera_nn::{Precision, SgdConfig};

    const TINY: NetConfig = NetConfig {
        batch: 4,
        image: 4,
        channels: [2, 3],
        classes: CLASSES,
        precision: Precision::F32,
    };
    const SGD: SgdConfig = SgdConfig {
        learning_rate: 0.02,
        momentum: 0.9,
        weight_decay: 0.0,
    };

    /// A file in the temporary folder, removed when dropped.
    struct TempFile(std::path::PathBuf);

    impl TempFile {
        fn new(name: &str) -> Self {
            TempFile(std::env::temp_dir().join(format!(
                "tessera-train-{}-{name}.safetensors",
                std::process::id()
            )))
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn params(rt: &Runtime, net: &mut Net) -> Vec<Vec<u32>> {
        net.parameters()
            .iter()
            .map(|(_, p)| {
                p.value
                    .read(rt)
                    .unwrap()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn saved_parameters_load_exactly_and_evaluate_the_same() {
        let rt = Runtime::new().unwrap();
        let data = Dataset::stripes(8, TINY.image, 1);
        let mut trained = Net::new(&rt, TINY, SGD, 3).unwrap();
        for step in 0..2 {
            let (images, labels) = data.batch(step * TINY.batch, TINY.batch);
            trained.train_step(&rt, &images, &labels, false).unwrap();
        }
        let file = TempFile::new("round-trip");
        save(&rt, &mut trained, &file.0).unwrap();

        let mut loaded = Net::new(&rt, TINY, SGD, 99).unwrap();
        assert_ne!(params(&rt, &mut loaded), params(&rt, &mut trained));
        load(&rt, &mut loaded, &file.0).unwrap();
        assert_eq!(params(&rt, &mut loaded), params(&rt, &mut trained));

        let (images, labels) = data.batch(4, TINY.batch);
        let (loss_trained, right_trained) = trained.evaluate(&rt, &images, &labels).unwrap();
        let (loss_loaded, right_loaded) = loaded.evaluate(&rt, &images, &labels).unwrap();
        assert_eq!(loss_loaded.to_bits(), loss_trained.to_bits());
        assert_eq!(right_loaded, right_trained);
    }

    #[test]
    fn a_shape_mismatch_or_a_missing_tensor_is_an_error_that_changes_nothing() {
        let rt = Runtime::new().unwrap();
        let mut small = Net::new(&rt, TINY, SGD, 3).unwrap();
        let file = TempFile::new("mismatch");
        save(&rt, &mut small, &file.0).unwrap();

        let wider = NetConfig {
            channels: [2, 5],
            ..TINY
        };
        let mut other = Net::new(&rt, wider, SGD, 4).unwrap();
        let before = params(&rt, &mut other);
        let error = load(&rt, &mut other, &file.0).unwrap_err().to_string();
        assert!(
            error.contains("`conv2.weight`") && error.contains("[3, 2, 3, 3]"),
            "{error}"
        );
        assert_eq!(params(&rt, &mut other), before);

        // A file with all but the last tensor.
        let partial = TempFile::new("partial");
        let one = [0u8; 4];
        let view = TensorView::new(Dtype::F32, vec![1], &one).unwrap();
        std::fs::write(
            &partial.0,
            safetensors::serialize([("conv1.bias", view)], None).unwrap(),
        )
        .unwrap();
        let mut net = Net::new(&rt, TINY, SGD, 3).unwrap();
        let error = load(&rt, &mut net, &partial.0).unwrap_err().to_string();
        assert!(error.contains("no tensor `conv1.weight`"), "{error}");

        let missing = std::env::temp_dir().join("tessera-train-no-such-file.safetensors");
        let error = load(&rt, &mut net, &missing).unwrap_err().to_string();
        assert!(error.starts_with("reading "), "{error}");
    }
}
