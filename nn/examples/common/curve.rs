//! The loss curve: every step's loss as a CSV file and as a PNG line plot.

use std::path::Path;

use plotters::prelude::*;

/// Writes `step,loss` lines, one per step, to `path`.
pub fn write_csv(losses: &[f32], path: &Path) -> Result<(), String> {
    let mut text = String::from("step,loss\n");
    for (step, loss) in losses.iter().enumerate() {
        text.push_str(&format!("{step},{loss}\n"));
    }
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("creating the folder {}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// TrueType fonts that Debian and Ubuntu packages install; the plot's text needs one.
const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
];

/// Draws the losses as a line over the steps into a PNG at `path`. The error says why not, as a
/// sentence (no font, a file that cannot be written).
pub fn write_png(losses: &[f32], path: &Path) -> Result<(), String> {
    let Some(font) = FONT_PATHS.iter().find_map(|p| std::fs::read(p).ok()) else {
        return Err(format!(
            "no TrueType font at {} (install fonts-dejavu-core)",
            FONT_PATHS.join(", ")
        ));
    };
    // plotters keeps the font for the rest of the process.
    let font: &'static [u8] = Box::leak(font.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, font)
        .map_err(|_| "the font could not be read".to_owned())?;
    let failed = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());

    let root = BitMapBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failed(&e))?;
    let top = losses
        .iter()
        .copied()
        .filter(|l| l.is_finite())
        .fold(0.0f32, f32::max)
        .max(1e-3)
        * 1.05;
    let last = losses.len().saturating_sub(1).max(1) as u32;
    let mut chart = ChartBuilder::on(&root)
        .caption("training loss", ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0u32..last, 0f32..top)
        .map_err(|e| failed(&e))?;
    chart
        .configure_mesh()
        .x_desc("step")
        .y_desc("batch loss (cross-entropy)")
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| failed(&e))?;
    chart
        .draw_series(LineSeries::new(
            losses
                .iter()
                .enumerate()
                .map(|(step, &loss)| (step as u32, loss)),
            RGBColor(70, 110, 180).stroke_width(2),
        ))
        .map_err(|e| failed(&e))?;
    root.present().map_err(|e| failed(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_csv_has_a_line_per_step_and_the_png_is_drawn_or_refused_in_a_sentence() {
        let dir = std::env::temp_dir().join(format!("tessera-curve-{}", std::process::id()));
        let csv = dir.join("loss.csv");
        write_csv(&[2.5, 1.25, 0.5], &csv).unwrap();
        let text = std::fs::read_to_string(&csv).unwrap();
        assert_eq!(text, "step,loss\n0,2.5\n1,1.25\n2,0.5\n");

        let png = dir.join("loss.png");
        let has_font = FONT_PATHS.iter().any(|p| Path::new(p).exists());
        match write_png(&[2.5, 1.25, 0.5], &png) {
            Ok(()) => assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG")),
            Err(e) => assert!(!has_font && e.starts_with("no TrueType font"), "{e}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
