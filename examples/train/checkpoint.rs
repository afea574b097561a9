//! Saving and loading the network's parameters as a `safetensors` file: one little-endian f32
//! tensor per parameter, named as in [`Tensors::NAMES`], with its row-major shape.

use std::error::Error;
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use tessera::Runtime;

use crate::net::{Net, Tensors};

type BoxError = Box<dyn Error>;

/// Writes every parameter of `net` to `path`, replacing the file if there is one.
pub fn save(rt: &Runtime, net: &Net, path: &Path) -> Result<(), BoxError> {
    let mut bytes = Vec::with_capacity(Tensors::NAMES.len());
    for tensor in net.params.all() {
        let values = tensor.read(rt)?;
        bytes.push(
            values
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
        );
    }
    let mut views = Vec::with_capacity(Tensors::NAMES.len());
    for ((name, shape), data) in Tensors::NAMES.iter().zip(&net.shapes).zip(&bytes) {
        let view = TensorView::new(Dtype::F32, shape.clone(), data)
            .map_err(|e| format!("`{name}` does not fit its shape {shape:?}: {e}"))?;
        views.push((*name, view));
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
    let extra: Vec<&str> = tensors
        .names()
        .into_iter()
        .filter(|name| !Tensors::NAMES.contains(name))
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
    let mut values = Vec::with_capacity(Tensors::NAMES.len());
    for (name, shape) in Tensors::NAMES.iter().zip(&net.shapes) {
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
    for (tensor, floats) in net.params.all_mut().into_iter().zip(&values) {
        tensor.write(rt, floats)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Dataset, CLASSES};
    use crate::net::NetConfig;
    use tessera::nn::SgdConfig;

    const TINY: NetConfig = NetConfig {
        batch: 4,
        image: 4,
        channels: [2, 3],
        classes: CLASSES,
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

    fn params(rt: &Runtime, net: &Net) -> Vec<Vec<u32>> {
        net.params
            .all()
            .iter()
            .map(|t| t.read(rt).unwrap().iter().map(|v| v.to_bits()).collect())
            .collect()
    }

    #[test]
    fn saved_parameters_load_exactly_and_evaluate_the_same() {
        let rt = Runtime::new().unwrap();
        let data = Dataset::stripes(8, TINY.image, 1);
        let mut trained = Net::new(&rt, TINY, SGD, 3).unwrap();
        for step in 0..2 {
            let (images, labels) = data.batch(step * TINY.batch, TINY.batch);
            trained.train_step(&rt, &images, &labels).unwrap();
        }
        let file = TempFile::new("round-trip");
        save(&rt, &trained, &file.0).unwrap();

        let mut loaded = Net::new(&rt, TINY, SGD, 99).unwrap();
        assert_ne!(params(&rt, &loaded), params(&rt, &trained));
        load(&rt, &mut loaded, &file.0).unwrap();
        assert_eq!(params(&rt, &loaded), params(&rt, &trained));

        let (images, labels) = data.batch(4, TINY.batch);
        let (loss_trained, right_trained) = trained.evaluate(&rt, &images, &labels).unwrap();
        let (loss_loaded, right_loaded) = loaded.evaluate(&rt, &images, &labels).unwrap();
        assert_eq!(loss_loaded.to_bits(), loss_trained.to_bits());
        assert_eq!(right_loaded, right_trained);
    }

    #[test]
    fn a_shape_mismatch_or_a_missing_tensor_is_an_error_that_changes_nothing() {
        let rt = Runtime::new().unwrap();
        let small = Net::new(&rt, TINY, SGD, 3).unwrap();
        let file = TempFile::new("mismatch");
        save(&rt, &small, &file.0).unwrap();

        let wider = NetConfig {
            channels: [2, 5],
            ..TINY
        };
        let mut other = Net::new(&rt, wider, SGD, 4).unwrap();
        let before = params(&rt, &other);
        let error = load(&rt, &mut other, &file.0).unwrap_err().to_string();
        assert!(
            error.contains("`conv2.weight`") && error.contains("[3, 2, 3, 3]"),
            "{error}"
        );
        assert_eq!(params(&rt, &other), before);

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
