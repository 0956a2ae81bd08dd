//! [`Column`]: one value per point that the page can colour by and shows on hover — a
//! label (categories) or a number (a colour bar).

use crate::io::Labels;

/// A named column of per-point values.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// The name in the page's "colour by" list and hover box.
    pub name: String,
    /// The values, one per point in the embedding's row order.
    pub values: Values,
}

/// The values of a [`Column`].
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    /// Categories: a palette and a legend whose entries toggle their points.
    Categories(Labels),
    /// Numbers: a continuous colour scale over the finite values' range; NaN is missing
    /// (drawn grey).
    Numbers(Vec<f64>),
}

/// Numeric text columns with whole values and at most this many distinct ones are taken as
/// categories (cluster ids, batches, digits), the rest as continuous numbers.
pub const MAX_NUMERIC_CATEGORIES: usize = 32;

impl Column {
    /// A column of categories.
    pub fn categorical(name: impl Into<String>, labels: Labels) -> Column {
        Column {
            name: name.into(),
            values: Values::Categories(labels),
        }
    }

    /// A column of categories from one string per point (legend in sorted order).
    pub fn from_strings(name: impl Into<String>, values: &[String]) -> Column {
        Column::categorical(name, Labels::from_strings(values))
    }

    /// A column of numbers, shown on a continuous colour scale.
    pub fn numeric(name: impl Into<String>, values: Vec<f64>) -> Column {
        Column {
            name: name.into(),
            values: Values::Numbers(values),
        }
    }

    /// A column of labels whose file does not say whether they are categories (an `.h5ad`'s
    /// integer `obs` column): more than [`MAX_NUMERIC_CATEGORIES`] distinct values that are
    /// all numbers (counts, scores) become continuous numbers, anything else categories.
    pub fn from_labels(name: impl Into<String>, labels: Labels) -> Column {
        if labels.names.len() > MAX_NUMERIC_CATEGORIES {
            let numbers: Option<Vec<f64>> =
                labels.names.iter().map(|s| s.parse::<f64>().ok()).collect();
            if let Some(v) = numbers {
                let values = labels.codes.iter().map(|&c| v[c as usize]).collect();
                return Column::numeric(name, values);
            }
        }
        Column::categorical(name, labels)
    }

    /// A column of a text table (`--meta`), its kind guessed from its values: numbers
    /// (empty, `NA` and `nan` fields missing) are continuous unless they are all whole and
    /// take at most [`MAX_NUMERIC_CATEGORIES`] values, which makes them categories, as
    /// anything else does.
    pub fn from_text(name: impl Into<String>, values: Vec<String>) -> Column {
        let numbers: Option<Vec<f64>> = values.iter().map(|s| parse_number(s)).collect();
        let Some(numbers) = numbers else {
            return Column::from_strings(name, &values);
        };
        let finite = numbers.iter().filter(|v| v.is_finite());
        let whole: Option<Vec<i128>> = finite.clone().map(|&v| crate::io::integral(v)).collect();
        match whole {
            Some(ints) if ints.len() == numbers.len() => {
                let mut distinct = ints.clone();
                distinct.sort_unstable();
                distinct.dedup();
                if distinct.len() <= MAX_NUMERIC_CATEGORIES {
                    return Column::categorical(name, Labels::from_ints(&ints));
                }
                Column::numeric(name, numbers)
            }
            _ => Column::numeric(name, numbers),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match &self.values {
            Values::Categories(l) => l.len(),
            Values::Numbers(v) => v.len(),
        }
    }

    /// True when the column holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A table field as a number: `Some(NaN)` for a missing value, `None` for text.
fn parse_number(s: &str) -> Option<f64> {
    match s {
        "" | "NA" | "nan" | "NaN" => Some(f64::NAN),
        s => s.parse::<f64>().ok().filter(|v| v.is_finite()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(values: &[&str]) -> Vec<String> {
        values.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn text_columns_become_categories_or_numbers() {
        let c = Column::from_text("cluster", text(&["2", "1", "2"]));
        assert!(matches!(&c.values, Values::Categories(l) if l.names == ["1", "2"]));
        let c = Column::from_text("type", text(&["T", "B", "1"]));
        assert!(matches!(&c.values, Values::Categories(l) if l.names == ["1", "B", "T"]));
        let c = Column::from_text("depth", text(&["0.5", "", "2"]));
        match &c.values {
            Values::Numbers(v) => assert!(v[0] == 0.5 && v[1].is_nan() && v[2] == 2.0),
            other => panic!("{other:?}"),
        }
        let many: Vec<String> = (0..=MAX_NUMERIC_CATEGORIES)
            .map(|i| i.to_string())
            .collect();
        assert!(matches!(
            Column::from_text("age", many).values,
            Values::Numbers(_)
        ));
        let counts: Vec<i128> = (0..100).collect();
        let c = Column::from_labels("n_genes", Labels::from_ints(&counts));
        assert!(matches!(&c.values, Values::Numbers(v) if v[99] == 99.0));
        let c = Column::from_labels("batch", Labels::from_ints(&[3, 1]));
        assert!(matches!(c.values, Values::Categories(_)));
        // A missing value among whole numbers keeps the column continuous.
        let c = Column::from_text("n", text(&["1", "NA"]));
        assert!(matches!(c.values, Values::Numbers(_)));
    }
}
