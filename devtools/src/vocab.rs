//! Vocabulary of the synthetic sample catalog: domains, categories, brands,
//! attribute schemas and the phrases descriptions and reviews are made of.
//!
//! Each category lists "needs": descriptive phrases a shopper might use that
//! deliberately avoid the category's title nouns, so the sample catalog has
//! real work for the semantic arm.

pub enum Attr {
    /// A string attribute drawn from a fixed set of values.
    Choice(&'static str, &'static [&'static str]),
    /// An integer attribute in an inclusive range, with a unit for prose.
    Int(&'static str, i64, i64, &'static str),
    /// A boolean feature, with the phrase used when it is present.
    Flag(&'static str, &'static str),
}

pub struct Category {
    pub domain: &'static str,
    pub key: &'static str,
    /// Two-letter code used in models and SKUs; unique across categories.
    pub code: &'static str,
    /// Title nouns; the first is canonical.
    pub nouns: &'static [&'static str],
    /// Descriptive needs without title words.
    pub needs: &'static [&'static str],
    /// Aspects reviewers talk about.
    pub aspects: &'static [&'static str],
    pub attrs: &'static [Attr],
    /// Price range in whole currency units.
    pub price: (u32, u32),
}

pub struct Domain {
    pub key: &'static str,
    pub brands: &'static [(&'static str, &'static str)],
}

pub const DOMAINS: &[Domain] = &[
    Domain {
        key: "electronics",
        brands: &[
            ("Aurel", "AU"),
            ("Kestrel", "KS"),
            ("Norvik", "NV"),
            ("Sonari", "SN"),
            ("Voltrix", "VX"),
            ("Pixelon", "PX"),
            ("Quanta Labs", "QL"),
            ("Halcyon", "HC"),
            ("Zephra", "ZP"),
            ("Brightwave", "BW"),
        ],
    },
    Domain {
        key: "home_kitchen",
        brands: &[
            ("Hearthly", "HE"),
            ("Copperleaf", "CL"),
            ("Brewmont", "BM"),
            ("Tidewell", "TW"),
            ("Maison Arlo", "MA"),
            ("Kitcheno", "KO"),
            ("Purevale", "PV"),
            ("Oakhurst", "OH"),
        ],
    },
    Domain {
        key: "outdoor",
        brands: &[
            ("Ridgeline", "RL"),
            ("Trailforge", "TF"),
            ("Alpenhaus", "AH"),
            ("Northwind", "NW"),
            ("Summitry", "SM"),
            ("Cairnway", "CW"),
            ("Basecamp Co", "BC"),
            ("Driftwood", "DW"),
        ],
    },
    Domain {
        key: "office",
        brands: &[
            ("Deskwise", "DK"),
            ("Ergonova", "EN"),
            ("Inkwell", "IW"),
            ("Paperlane", "PL"),
            ("Lumora", "LM"),
            ("Stackly", "ST"),
        ],
    },
];

use Attr::{Choice, Flag, Int};

pub const CATEGORIES: &[Category] = &[
    // electronics
    Category {
        domain: "electronics",
        key: "headphones",
        code: "HP",
        nouns: &["Headphones", "Headset"],
        needs: &[
            "blocking out engine noise on long flights",
            "focused listening in a noisy open office",
            "private audio for late night movies",
        ],
        aspects: &[
            "noise cancelling",
            "comfort",
            "battery life",
            "bass response",
            "microphone clarity",
        ],
        attrs: &[
            Choice("form_factor", &["over-ear", "on-ear", "in-ear"]),
            Choice(
                "connectivity",
                &["bluetooth", "wired", "bluetooth and wired"],
            ),
            Flag("noise_cancelling", "active noise cancellation"),
            Int("battery_hours", 8, 60, "hours of battery"),
        ],
        price: (29, 449),
    },
    Category {
        domain: "electronics",
        key: "earbuds",
        code: "EB",
        nouns: &["Earbuds", "True Wireless Buds"],
        needs: &[
            "tiny cordless audio for running workouts",
            "pocketable sound for the commute",
            "sweatproof music at the gym",
        ],
        aspects: &[
            "fit",
            "battery life",
            "charging case",
            "call quality",
            "sound",
        ],
        attrs: &[
            Choice("fit", &["stem", "bean", "wingtip"]),
            Flag("noise_cancelling", "active noise cancellation"),
            Int("battery_hours", 4, 12, "hours of playback"),
            Choice("water_resistance", &["IPX4", "IPX5", "IP57"]),
        ],
        price: (19, 299),
    },
    Category {
        domain: "electronics",
        key: "speakers",
        code: "SP",
        nouns: &["Bluetooth Speaker", "Portable Speaker"],
        needs: &[
            "loud music for a backyard party",
            "rugged sound at the beach",
            "filling a living room with audio",
        ],
        aspects: &["volume", "bass", "durability", "battery life", "pairing"],
        attrs: &[
            Int("output_watts", 5, 120, "watts of output"),
            Flag("waterproof", "waterproof housing"),
            Int("battery_hours", 6, 30, "hours of battery"),
            Choice("size", &["mini", "medium", "large"]),
        ],
        price: (25, 399),
    },
    Category {
        domain: "electronics",
        key: "laptops",
        code: "LT",
        nouns: &["Laptop", "Notebook"],
        needs: &[
            "portable computer for college coursework",
            "machine for editing video on the go",
            "lightweight computer for business travel",
        ],
        aspects: &[
            "keyboard",
            "screen",
            "battery life",
            "performance",
            "weight",
        ],
        attrs: &[
            Int("screen_inches", 13, 17, "inch screen"),
            Int("ram_gb", 8, 64, "GB of memory"),
            Int("storage_gb", 256, 2048, "GB of storage"),
            Choice("processor", &["4-core", "8-core", "12-core"]),
        ],
        price: (399, 2999),
    },
    Category {
        domain: "electronics",
        key: "monitors",
        code: "MN",
        nouns: &["Monitor", "Display"],
        needs: &[
            "second screen for spreadsheets at work",
            "sharp panel for photo retouching",
            "high refresh gaming at a desk",
        ],
        aspects: &[
            "colour accuracy",
            "refresh rate",
            "stand",
            "brightness",
            "ports",
        ],
        attrs: &[
            Int("screen_inches", 22, 34, "inch panel"),
            Choice("resolution", &["1080p", "1440p", "4K"]),
            Int("refresh_hz", 60, 240, "Hz refresh"),
            Choice("panel", &["IPS", "VA", "OLED"]),
        ],
        price: (119, 1299),
    },
    Category {
        domain: "electronics",
        key: "keyboards",
        code: "KB",
        nouns: &["Mechanical Keyboard", "Keyboard"],
        needs: &[
            "satisfying typing for programmers",
            "quiet typing in a shared room",
            "compact layout for a small desk",
        ],
        aspects: &[
            "switch feel",
            "build quality",
            "noise",
            "keycaps",
            "software",
        ],
        attrs: &[
            Choice("switch_type", &["linear", "tactile", "clicky", "membrane"]),
            Choice("layout", &["full-size", "tenkeyless", "75%", "65%"]),
            Flag("wireless", "wireless connection"),
            Flag("backlit", "per-key backlight"),
        ],
        price: (29, 249),
    },
    Category {
        domain: "electronics",
        key: "mice",
        code: "MS",
        nouns: &["Wireless Mouse", "Mouse"],
        needs: &[
            "pointing device that eases wrist strain",
            "precise aiming for competitive games",
            "travel friendly pointer for a laptop bag",
        ],
        aspects: &["grip", "tracking", "buttons", "battery life", "weight"],
        attrs: &[
            Choice("grip", &["palm", "claw", "fingertip", "vertical"]),
            Int("dpi", 800, 26000, "DPI sensor"),
            Flag("wireless", "wireless connection"),
            Int("buttons", 2, 12, "buttons"),
        ],
        price: (12, 159),
    },
    Category {
        domain: "electronics",
        key: "cameras",
        code: "CM",
        nouns: &["Mirrorless Camera", "Camera"],
        needs: &[
            "capturing wildlife far away",
            "vlogging with a flip screen",
            "sharp travel snapshots without a phone",
        ],
        aspects: &["autofocus", "image quality", "handling", "video", "lenses"],
        attrs: &[
            Int("megapixels", 20, 61, "megapixel sensor"),
            Choice("sensor", &["APS-C", "full-frame", "micro four thirds"]),
            Flag("stabilization", "in-body stabilization"),
            Choice("video", &["4K30", "4K60", "8K"]),
        ],
        price: (499, 3999),
    },
    Category {
        domain: "electronics",
        key: "smartwatches",
        code: "SW",
        nouns: &["Smartwatch", "Fitness Watch"],
        needs: &[
            "tracking heart rate during marathon training",
            "wrist notifications without a phone",
            "sleep tracking on the wrist",
        ],
        aspects: &[
            "battery life",
            "tracking accuracy",
            "display",
            "strap comfort",
            "apps",
        ],
        attrs: &[
            Int("battery_days", 1, 21, "days of battery"),
            Flag("gps", "built-in GPS"),
            Int("water_rating_m", 30, 100, "metre water rating"),
            Choice("case_mm", &["40mm", "44mm", "46mm"]),
        ],
        price: (79, 799),
    },
    Category {
        domain: "electronics",
        key: "routers",
        code: "RT",
        nouns: &["Wi-Fi Router", "Mesh Router"],
        needs: &[
            "reliable internet in every room of a big house",
            "low lag connection for online gaming",
            "covering a garden office with signal",
        ],
        aspects: &["range", "speed", "setup", "stability", "app"],
        attrs: &[
            Choice("wifi_standard", &["Wi-Fi 6", "Wi-Fi 6E", "Wi-Fi 7"]),
            Int("coverage_sqft", 1500, 7500, "square feet of coverage"),
            Flag("mesh", "mesh expansion"),
            Int("lan_ports", 1, 8, "LAN ports"),
        ],
        price: (49, 699),
    },
    Category {
        domain: "electronics",
        key: "tablets",
        code: "TB",
        nouns: &["Tablet", "Slate"],
        needs: &[
            "reading comics and ebooks on the sofa",
            "sketching with a stylus",
            "keeping kids entertained in the car",
        ],
        aspects: &[
            "screen",
            "battery life",
            "speakers",
            "stylus",
            "performance",
        ],
        attrs: &[
            Int("screen_inches", 8, 13, "inch screen"),
            Int("storage_gb", 64, 1024, "GB of storage"),
            Flag("cellular", "cellular connectivity"),
            Flag("stylus_support", "stylus support"),
        ],
        price: (129, 1499),
    },
    // home & kitchen
    Category {
        domain: "home_kitchen",
        key: "coffee_makers",
        code: "CF",
        nouns: &["Coffee Maker", "Espresso Machine"],
        needs: &[
            "morning brew for a busy household",
            "cafe style shots at home",
            "caffeine fix without a trip to the barista",
        ],
        aspects: &["taste", "cleaning", "speed", "milk frother", "noise"],
        attrs: &[
            Choice("brew_type", &["drip", "espresso", "pour-over", "pod"]),
            Int("capacity_cups", 1, 14, "cup capacity"),
            Flag("grinder", "built-in grinder"),
            Flag("programmable", "programmable timer"),
        ],
        price: (29, 1199),
    },
    Category {
        domain: "home_kitchen",
        key: "blenders",
        code: "BL",
        nouns: &["Blender", "Personal Blender"],
        needs: &[
            "smoothies before work",
            "crushing ice for frozen drinks",
            "pureeing soups and baby food",
        ],
        aspects: &["power", "noise", "cleaning", "jar size", "durability"],
        attrs: &[
            Int("power_watts", 300, 1800, "watt motor"),
            Int("jar_oz", 16, 72, "ounce jar"),
            Flag("vacuum", "vacuum blending"),
            Int("speeds", 2, 10, "speeds"),
        ],
        price: (25, 599),
    },
    Category {
        domain: "home_kitchen",
        key: "vacuums",
        code: "VC",
        nouns: &["Robot Vacuum", "Cordless Vacuum"],
        needs: &[
            "picking up pet hair from carpets",
            "keeping floors tidy while away",
            "quick cleanups of crumbs",
        ],
        aspects: &["suction", "battery life", "navigation", "bin size", "noise"],
        attrs: &[
            Int("suction_pa", 1500, 8000, "Pa suction"),
            Int("runtime_min", 30, 180, "minutes runtime"),
            Flag("mapping", "lidar mapping"),
            Flag("self_empty", "self-emptying dock"),
        ],
        price: (99, 1299),
    },
    Category {
        domain: "home_kitchen",
        key: "air_purifiers",
        code: "AP",
        nouns: &["Air Purifier", "HEPA Purifier"],
        needs: &[
            "relief from pollen allergies in the bedroom",
            "removing wildfire smoke indoors",
            "fresher air in a nursery",
        ],
        aspects: &["filtration", "noise", "filter cost", "coverage", "sensors"],
        attrs: &[
            Int("room_sqft", 200, 1500, "square feet room coverage"),
            Choice("filter", &["HEPA", "HEPA + carbon", "ionic"]),
            Flag("air_quality_sensor", "air quality sensor"),
            Int("noise_db", 22, 55, "dB at low speed"),
        ],
        price: (49, 899),
    },
    Category {
        domain: "home_kitchen",
        key: "cookware",
        code: "CK",
        nouns: &["Cookware Set", "Frying Pan"],
        needs: &[
            "searing steaks evenly",
            "cooking eggs without sticking",
            "outfitting a first apartment kitchen",
        ],
        aspects: &[
            "heat distribution",
            "nonstick coating",
            "handles",
            "weight",
            "cleaning",
        ],
        attrs: &[
            Choice(
                "material",
                &[
                    "stainless steel",
                    "cast iron",
                    "ceramic nonstick",
                    "carbon steel",
                ],
            ),
            Int("pieces", 1, 15, "pieces"),
            Flag("induction", "induction compatible"),
            Flag("dishwasher_safe", "dishwasher safe"),
        ],
        price: (19, 699),
    },
    Category {
        domain: "home_kitchen",
        key: "knives",
        code: "KN",
        nouns: &["Chef Knife", "Knife Set"],
        needs: &[
            "slicing tomatoes paper thin",
            "prepping vegetables quickly",
            "a gift for someone who loves cooking",
        ],
        aspects: &["sharpness", "balance", "edge retention", "handle", "value"],
        attrs: &[
            Choice(
                "steel",
                &["German steel", "Japanese VG-10", "Damascus", "high-carbon"],
            ),
            Int("blade_inches", 6, 10, "inch blade"),
            Int("pieces", 1, 18, "pieces"),
            Flag("block_included", "storage block"),
        ],
        price: (15, 499),
    },
    Category {
        domain: "home_kitchen",
        key: "kettles",
        code: "KT",
        nouns: &["Electric Kettle", "Gooseneck Kettle"],
        needs: &[
            "hot water for tea in a minute",
            "precise pouring for filter brews",
            "boiling water in a dorm room",
        ],
        aspects: &["speed", "temperature control", "pour", "noise", "build"],
        attrs: &[
            Int("capacity_ml", 600, 1800, "ml capacity"),
            Flag("temperature_control", "variable temperature"),
            Choice("body", &["stainless steel", "glass", "plastic"]),
            Int("power_watts", 900, 3000, "watts"),
        ],
        price: (19, 199),
    },
    Category {
        domain: "home_kitchen",
        key: "air_fryers",
        code: "AF",
        nouns: &["Air Fryer", "Convection Fryer"],
        needs: &[
            "crispy fries with little oil",
            "quick weeknight dinners",
            "reheating pizza so it stays crunchy",
        ],
        aspects: &["crispiness", "capacity", "cleaning", "presets", "noise"],
        attrs: &[
            Int("capacity_quarts", 2, 10, "quart basket"),
            Int("power_watts", 1000, 2400, "watts"),
            Flag("dual_basket", "dual baskets"),
            Flag("window", "viewing window"),
        ],
        price: (39, 329),
    },
    Category {
        domain: "home_kitchen",
        key: "bedding",
        code: "BD",
        nouns: &["Duvet", "Sheet Set"],
        needs: &[
            "staying cool on hot summer nights",
            "cosy warmth through winter",
            "soft sleep for sensitive skin",
        ],
        aspects: &["softness", "breathability", "durability", "fit", "washing"],
        attrs: &[
            Choice(
                "material",
                &["cotton percale", "linen", "bamboo", "microfiber", "down"],
            ),
            Choice("size", &["twin", "full", "queen", "king"]),
            Int("thread_count", 200, 1000, "thread count"),
            Flag("hypoallergenic", "hypoallergenic fill"),
        ],
        price: (29, 499),
    },
    // outdoor
    Category {
        domain: "outdoor",
        key: "tents",
        code: "TN",
        nouns: &["Backpacking Tent", "Camping Tent"],
        needs: &[
            "shelter for a weekend in the mountains",
            "staying dry during stormy nights outside",
            "sleeping under the stars with the family",
        ],
        aspects: &["weight", "setup", "waterproofing", "space", "ventilation"],
        attrs: &[
            Int("capacity_people", 1, 8, "person capacity"),
            Int("weight_g", 900, 9000, "grams packed"),
            Choice("season", &["3-season", "4-season"]),
            Flag("freestanding", "freestanding frame"),
        ],
        price: (59, 899),
    },
    Category {
        domain: "outdoor",
        key: "sleeping_bags",
        code: "SB",
        nouns: &["Sleeping Bag", "Quilt"],
        needs: &[
            "staying warm on frosty nights outdoors",
            "light bedroll for thru-hiking",
            "cosy overnight at a campsite",
        ],
        aspects: &["warmth", "packability", "zipper", "comfort", "weight"],
        attrs: &[
            Int("temp_rating_c", -20, 10, "degree C comfort rating"),
            Choice("fill", &["down", "synthetic"]),
            Int("weight_g", 500, 2500, "grams"),
            Choice("shape", &["mummy", "rectangular", "quilt"]),
        ],
        price: (49, 699),
    },
    Category {
        domain: "outdoor",
        key: "backpacks",
        code: "BP",
        nouns: &["Hiking Backpack", "Daypack"],
        needs: &[
            "carrying gear on multi-day treks",
            "hauling a laptop and lunch on a bike commute",
            "light load for summit scrambles",
        ],
        aspects: &["fit", "pockets", "durability", "hip belt", "rain cover"],
        attrs: &[
            Int("volume_l", 15, 85, "litre volume"),
            Flag("rain_cover", "rain cover"),
            Choice("frame", &["frameless", "internal frame"]),
            Flag("hydration_sleeve", "hydration sleeve"),
        ],
        price: (29, 399),
    },
    Category {
        domain: "outdoor",
        key: "hiking_boots",
        code: "HB",
        nouns: &["Hiking Boots", "Trail Shoes"],
        needs: &[
            "ankle support on rocky trails",
            "dry feet crossing streams",
            "grip on muddy descents",
        ],
        aspects: &["comfort", "grip", "waterproofing", "break-in", "durability"],
        attrs: &[
            Choice("cut", &["low", "mid", "high"]),
            Flag("waterproof", "waterproof membrane"),
            Choice("sole", &["Vibram", "rubber lug", "EVA"]),
            Int("weight_g", 600, 1600, "grams per pair"),
        ],
        price: (59, 329),
    },
    Category {
        domain: "outdoor",
        key: "bike_helmets",
        code: "BH",
        nouns: &["Bike Helmet", "Cycling Helmet"],
        needs: &[
            "head protection for the daily ride to work",
            "safety gear for mountain trails",
            "something safe for a child learning to ride",
        ],
        aspects: &["fit", "ventilation", "weight", "visor", "safety"],
        attrs: &[
            Flag("mips", "MIPS protection"),
            Choice("style", &["road", "mountain", "urban", "kids"]),
            Int("vents", 4, 24, "vents"),
            Flag("light", "integrated rear light"),
        ],
        price: (29, 299),
    },
    Category {
        domain: "outdoor",
        key: "headlamps",
        code: "HL",
        nouns: &["Headlamp", "Head Torch"],
        needs: &[
            "hands-free light for night hikes",
            "seeing the trail before sunrise",
            "reading in a tent after dark",
        ],
        aspects: &["brightness", "battery life", "comfort", "beam", "buttons"],
        attrs: &[
            Int("lumens", 100, 1500, "lumens"),
            Flag("rechargeable", "rechargeable battery"),
            Flag("red_light", "red night mode"),
            Choice("water_resistance", &["IPX4", "IPX7", "IPX8"]),
        ],
        price: (12, 149),
    },
    Category {
        domain: "outdoor",
        key: "water_bottles",
        code: "WB",
        nouns: &["Water Bottle", "Insulated Bottle"],
        needs: &[
            "keeping drinks icy cold all day",
            "staying hydrated on long hikes",
            "hot tea during a winter commute",
        ],
        aspects: &["insulation", "leaks", "lid", "weight", "cleaning"],
        attrs: &[
            Int("capacity_ml", 350, 2000, "ml capacity"),
            Flag("insulated", "double-wall insulation"),
            Choice("material", &["stainless steel", "Tritan plastic", "glass"]),
            Flag("straw_lid", "straw lid"),
        ],
        price: (9, 59),
    },
    // office
    Category {
        domain: "office",
        key: "office_chairs",
        code: "OC",
        nouns: &["Office Chair", "Ergonomic Chair"],
        needs: &[
            "sitting comfortably through long workdays",
            "easing lower back pain at a desk",
            "posture support for a home office",
        ],
        aspects: &[
            "lumbar support",
            "comfort",
            "adjustability",
            "build quality",
            "assembly",
        ],
        attrs: &[
            Flag("lumbar_support", "adjustable lumbar support"),
            Choice("upholstery", &["mesh", "fabric", "leather"]),
            Int("max_load_kg", 100, 180, "kg load rating"),
            Flag("headrest", "headrest"),
        ],
        price: (89, 1499),
    },
    Category {
        domain: "office",
        key: "standing_desks",
        code: "SD",
        nouns: &["Standing Desk", "Sit-Stand Desk"],
        needs: &[
            "switching between sitting and upright work",
            "less time sitting during the day",
            "a height adjustable workstation",
        ],
        aspects: &["stability", "motor noise", "assembly", "presets", "surface"],
        attrs: &[
            Int("width_cm", 100, 200, "cm wide top"),
            Choice("motors", &["single motor", "dual motor"]),
            Int("max_load_kg", 50, 160, "kg lift capacity"),
            Flag("memory_presets", "memory presets"),
        ],
        price: (199, 1299),
    },
    Category {
        domain: "office",
        key: "desk_lamps",
        code: "DL",
        nouns: &["Desk Lamp", "LED Task Light"],
        needs: &[
            "reducing eye strain while reading at night",
            "bright light for detailed crafts",
            "warm glow for a cosy workspace",
        ],
        aspects: &[
            "brightness",
            "colour temperature",
            "arm reach",
            "base",
            "controls",
        ],
        attrs: &[
            Int("lumens", 300, 1500, "lumens"),
            Flag("dimmable", "stepless dimming"),
            Flag("usb_charging", "USB charging port"),
            Choice("mount", &["base", "clamp"]),
        ],
        price: (19, 249),
    },
    Category {
        domain: "office",
        key: "notebooks",
        code: "NB",
        nouns: &["Notebook Journal", "Dotted Journal"],
        needs: &[
            "planning the week by hand",
            "sketching ideas with fountain pens",
            "keeping a daily diary",
        ],
        aspects: &["paper quality", "binding", "bleed-through", "cover", "size"],
        attrs: &[
            Int("pages", 80, 300, "pages"),
            Choice("ruling", &["dotted", "lined", "blank", "grid"]),
            Int("paper_gsm", 70, 160, "gsm paper"),
            Flag("lay_flat", "lay-flat binding"),
        ],
        price: (6, 49),
    },
];

pub const ADJECTIVES: &[&str] = &["Pro", "Lite", "Plus", "Max", "Air", "Studio", "Go", "Neo"];
pub const MODEL_SUFFIXES: &[&str] = &["", "", "", "S", "X", "Pro", "Mini", "Plus"];

pub const REVIEW_OPENERS_GOOD: &[&str] = &[
    "Really happy with this purchase.",
    "Exceeded my expectations.",
    "Solid choice after weeks of research.",
    "Would buy again without hesitation.",
];
pub const REVIEW_OPENERS_MIXED: &[&str] = &[
    "Decent, with a few caveats.",
    "Good for the price, not perfect.",
    "Mostly works as advertised.",
];
pub const REVIEW_OPENERS_BAD: &[&str] = &[
    "Disappointed overall.",
    "Returned it after two weeks.",
    "Not worth the money in my experience.",
];
