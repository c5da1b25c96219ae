// The order shared by sort, arg_sort, top_k and the arg reductions: NaN is larger than every
// number (so it sorts last ascending, first descending); equal values are tied.
fn is_nan_c(a: {{C}}) -> bool { return {{ISNAN}}; }
fn lt(a: {{C}}, b: {{C}}) -> bool { return !is_nan_c(a) && (is_nan_c(b) || a < b); }
