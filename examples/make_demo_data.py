#!/usr/bin/env python3
"""Generate the demo suite's prepared examples (written for this project; no copied dataset).

Writes ``eval_suites/demo/data/train.prepared.jsonl`` and ``test.prepared.jsonl``:

- 30 tools with realistic JSON-schema parameters (strings, numbers, integers, booleans, enums,
  nested objects, lists of strings and of objects);
- every tool has three English query templates, each with a hand-written Hebrew translation;
  templates 0 and 1 make the train split, template 2 the test split, so the splits are disjoint
  by template as well as by normalized query (both checked here);
- every call row has exactly one gold call; the prompt offers the gold tool plus 2 or 3
  distractors (shuffled); a Hebrew row is a translation of an English root row
  (``source_example_id``) with byte-identical tools and gold call; argument values appear in
  the Hebrew query exactly as the gold has them (names, e-mail addresses, quoted texts, dates
  and numbers stay as they are);
- the test split also holds 12 abstention examples (``expect = "no_call"``: a request none of
  the 3 offered tools can serve, hand-written in English with a matched Hebrew translation),
  appended after the call rows with their own seeded draw, so the call rows stay as they were.

Deterministic: the same ``--seed`` gives byte-identical files. Run from the repository root:

    python examples/make_demo_data.py            # writes the two prepared files
    python examples/make_demo_data.py --check    # regenerates in memory, fails if files differ
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_sommelier.data.prepare.formatting import (
    PREPARED_KEYS,
    check_pairs,
    read_prepared,
    validate_prepared_row,
)

SEED = 20240607
OUT_DIR = Path("eval_suites/demo/data")
TRAIN_PER_TEMPLATE = 3  # English roots per train template (every one gets a Hebrew translation)
TEST_PER_TEMPLATE = 2  # English candidates per test template, then trimmed to TEST_ROOTS
TEST_ROOTS = 48
TEST_HEBREW = 36
ABSTENTION_SEED = SEED + 1  # the abstention rows' own draw (the call rows' draws are untouched)
TRAIN_TEMPLATES = (0, 1)
TEST_TEMPLATES = (2,)

Slots = dict[str, str]


@dataclass(frozen=True)
class Template:
    """One phrasing of a request, in English and Hebrew, over the same named slots."""

    en: str
    he: str


@dataclass(frozen=True)
class Tool:
    """A tool: its JSON-schema description, an argument sampler and three templates.

    ``sample(rng)`` returns ``(arguments, en_slots, he_slots)``: the gold arguments and the
    strings each language's templates insert (values from the gold appear verbatim in both).
    """

    name: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    sample: Callable[[random.Random], tuple[dict[str, Any], Slots, Slots]]
    templates: tuple[Template, Template, Template]

    def schema(self) -> dict[str, Any]:
        """The tool description offered in prompts."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": {
                "type": "object",
                "properties": self.properties,
                "required": list(self.required),
            },
        }


# ---------------------------------------------------------------- schema helpers

STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
NUM: dict[str, Any] = {"type": "number"}
BOOL: dict[str, Any] = {"type": "boolean"}
DATE: dict[str, Any] = {"type": "string", "description": "YYYY-MM-DD"}
TIME: dict[str, Any] = {"type": "string", "description": "HH:MM"}


def enum(*values: str) -> dict[str, Any]:
    """A string enum schema."""
    return {"type": "string", "enum": list(values)}


def array(items: dict[str, Any]) -> dict[str, Any]:
    """An array schema."""
    return {"type": "array", "items": items}


def obj(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    """A nested object schema."""
    return {"type": "object", "properties": properties, "required": list(required)}


def num_text(value: float | int) -> str:
    """A number as the query shows it (and as its JSON value reads)."""
    return json.dumps(value)


# ---------------------------------------------------------------- value pools

CITIES = ["Paris", "Tokyo", "Berlin", "Haifa", "Lisbon", "Chicago", "Nairobi", "Oslo", "Madrid"]
AIRPORTS = ["TLV", "JFK", "LHR", "CDG", "FCO", "BER", "NRT", "ATH"]
EMAILS = ["dana@example.com", "omer.levi@example.org", "team@acme.io", "j.smith@example.net",
          "support@shop.example", "noa@example.com", "ravi@example.in"]
SUBJECTS = ["Quarterly report", "Lunch on Friday", "Server outage", "Invoice 4471",
            "Welcome aboard", "Trip plan", "Budget review"]
DATES = ["2025-03-14", "2025-04-02", "2025-05-20", "2025-06-11", "2025-07-01", "2025-08-23",
         "2025-09-09", "2025-10-30", "2025-11-15", "2025-12-05"]
TIMES = ["07:30", "08:00", "09:15", "10:45", "12:00", "13:30", "15:00", "16:20", "18:45", "21:00"]
TITLES = ["Team sync", "Dentist", "Yoga class", "Project kickoff", "Parents evening",
          "Code review", "Piano lesson"]
NAMES = ["Dana", "Yossi", "Maya", "Tom", "Avi", "Lior", "Sarah", "Noam"]
ARTISTS = ["Adele", "Miles Davis", "Coldplay", "Arik Einstein", "Daft Punk", "Nina Simone",
           "Ofra Haza"]
SYMBOLS = ["AAPL", "MSFT", "NVDA", "TEVA", "ESLT", "KO", "AMZN"]
CURRENCIES = ["USD", "EUR", "ILS", "GBP", "JPY"]
PLACES = ["Central Station", "City Hall", "Airport Terminal 3", "Dizengoff Center",
          "Main Street 12", "Science Museum", "Old Port"]
FLIGHTS = ["LY001", "BA164", "UA955", "AF1621", "LH686", "KL1234", "IZ321"]
TRACKING = ["1Z999AA10123456784", "RR123456785IL", "LX204417356CN", "9400110898825022",
            "JD014600003827", "CP778812345DE"]

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
WEEKDAYS_HE = {"monday": "שני", "tuesday": "שלישי", "wednesday": "רביעי", "thursday": "חמישי",
               "friday": "שישי", "saturday": "שבת", "sunday": "ראשון"}


def join_en(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def join_he(items: list[str]) -> str:
    """Hebrew list: 'א', 'א וב', 'א, ב וג' (the conjunction is the prefix ו)."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " ו" + items[-1]


def join_values_he(items: list[str]) -> str:
    """Hebrew list of Latin-script values: 'a', 'a ו-b', 'a, b ו-c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " ו-" + items[-1]


def quoted(items: list[str]) -> list[str]:
    """Each value in double quotes."""
    return [f'"{item}"' for item in items]


# ---------------------------------------------------------------- the 30 tools


def s_weather(r: random.Random):
    city, unit = r.choice(CITIES), r.choice(["celsius", "fahrenheit"])
    he_unit = {"celsius": "צלזיוס", "fahrenheit": "פרנהייט"}[unit]
    args = {"city": city, "unit": unit}
    return args, {"city": city, "unit": unit}, {"city": city, "unit": he_unit}


def s_timer(r: random.Random):
    minutes = r.choice([3, 5, 10, 12, 15, 20, 25, 45])
    label = r.choice(["pasta", "tea", "laundry", "bread", "eggs", "break", "study"])
    slots = {"minutes": str(minutes), "label": label}
    return {"minutes": minutes, "label": label}, slots, slots


def s_email(r: random.Random):
    to, subject, urgent = r.choice(EMAILS), r.choice(SUBJECTS), r.choice([True, False])
    en = {"to": to, "subject": subject, "urg": "urgent" if urgent else "not urgent"}
    he = {"to": to, "subject": subject, "urg": "דחוף" if urgent else "לא דחוף"}
    return {"to": to, "subject": subject, "urgent": urgent}, en, he


def s_event(r: random.Random):
    title, date, time = r.choice(TITLES), r.choice(DATES), r.choice(TIMES)
    duration = r.choice([15, 30, 45, 60, 90, 120])
    slots = {"title": title, "date": date, "time": time, "duration": str(duration)}
    args = {"title": title, "date": date, "start_time": time, "duration_minutes": duration}
    return args, slots, slots


def s_currency(r: random.Random):
    amount = r.choice([50, 120.5, 999, 2500, 75.25, 10, 300])
    source, target = r.sample(CURRENCIES, 2)
    slots = {"amount": num_text(amount), "src": source, "dst": target}
    return {"amount": amount, "from_currency": source, "to_currency": target}, slots, slots


CABINS_HE = {"economy": "מחלקת תיירים", "business": "מחלקת עסקים", "first": "מחלקה ראשונה"}


def s_flight(r: random.Random):
    origin, destination = r.sample(AIRPORTS, 2)
    date, passengers = r.choice(DATES), r.randint(2, 5)
    cabin = r.choice(list(CABINS_HE))
    base = {"origin": origin, "destination": destination, "date": date, "n": str(passengers)}
    args = {"origin": origin, "destination": destination, "date": date,
            "passengers": passengers, "cabin": cabin}
    return args, {**base, "cabin": cabin}, {**base, "cabin": CABINS_HE[cabin]}


CUISINES_HE = {"italian": "איטלקיות", "japanese": "יפניות", "mexican": "מקסיקניות",
               "indian": "הודיות", "thai": "תאילנדיות"}


def s_restaurants(r: random.Random):
    city, cuisine = r.choice(CITIES), r.choice(list(CUISINES_HE))
    price, open_now = r.randint(1, 4), r.choice([True, False])
    en = {"city": city, "cuisine": cuisine.capitalize(), "price": str(price),
          "open": "open now" if open_now else "even if closed now"}
    he = {"city": city, "cuisine": CUISINES_HE[cuisine], "price": str(price),
          "open": "שפתוחות עכשיו" if open_now else "גם אם סגורות עכשיו"}
    return {"city": city, "cuisine": cuisine, "max_price": price, "open_now": open_now}, en, he


PRIORITIES_HE = {"low": "נמוכה", "medium": "בינונית", "high": "גבוהה"}


def s_todo(r: random.Random):
    task = r.choice(["buy milk", "renew passport", "call the plumber", "pay rent", "fix the bike",
                     "book dentist", "clean the fridge"])
    priority = r.choice(list(PRIORITIES_HE))
    tags = r.sample(["work", "home", "errands", "family", "finance", "health"], r.randint(1, 2))
    en = {"task": task, "priority": priority, "tags": ", ".join(tags)}
    he = {"task": task, "priority": PRIORITIES_HE[priority], "tags": ", ".join(tags)}
    return {"task": task, "priority": priority, "tags": tags}, en, he


LANGUAGES_HE = {"french": "צרפתית", "spanish": "ספרדית", "german": "גרמנית", "italian": "איטלקית"}


def s_translate(r: random.Random):
    text = r.choice(["good morning", "where is the station", "thank you very much",
                     "the bill, please", "see you tomorrow", "I am lost"])
    language = r.choice(list(LANGUAGES_HE))
    en = {"text": text, "lang": language.capitalize()}
    he = {"text": text, "lang": LANGUAGES_HE[language]}
    return {"text": text, "target_language": language}, en, he


def s_music(r: random.Random):
    artist, shuffle = r.choice(ARTISTS), r.choice([True, False])
    en = {"artist": artist, "order": "on shuffle" if shuffle else "in order",
          "onoff": "on" if shuffle else "off", "mixed": "shuffled" if shuffle else "not shuffled"}
    he = {"artist": artist, "order": "בסדר אקראי" if shuffle else "לפי הסדר",
          "onoff": "מופעל" if shuffle else "כבוי", "mixed": "מעורבב" if shuffle else "לא מעורבב"}
    return {"artist": artist, "shuffle": shuffle}, en, he


MODES_HE = {"heat": "חימום", "cool": "קירור", "auto": "אוטומטי"}


def s_thermostat(r: random.Random):
    temperature, mode = r.choice([18, 19, 21, 22.5, 23, 24, 20.5]), r.choice(list(MODES_HE))
    en = {"temp": num_text(temperature), "mode": mode}
    he = {"temp": num_text(temperature), "mode": MODES_HE[mode]}
    return {"temperature": temperature, "mode": mode}, en, he


def s_stock(r: random.Random):
    symbol, exchange = r.choice(SYMBOLS), r.choice(["NASDAQ", "NYSE", "TASE"])
    slots = {"symbol": symbol, "exchange": exchange}
    return {"symbol": symbol, "exchange": exchange}, slots, slots


REPEATS_EN = {"once": "just once", "daily": "every day", "weekly": "every week"}
REPEATS_HE = {"once": "רק פעם אחת", "daily": "כל יום", "weekly": "כל שבוע"}


def s_reminder(r: random.Random):
    text = r.choice(["take vitamins", "water the plants", "stand up", "call mom",
                     "check the oven", "feed the cat"])
    time, repeat = r.choice(TIMES), r.choice(list(REPEATS_EN))
    en = {"text": text, "time": time, "repeat": REPEATS_EN[repeat]}
    he = {"text": text, "time": time, "repeat": REPEATS_HE[repeat]}
    return {"text": text, "time": time, "repeat": repeat}, en, he


def s_food(r: random.Random):
    restaurant = r.choice(["Pizza Roma", "Sushi Bar 7", "Falafel King", "Green Bowl",
                           "Burger Lab"])
    names = r.sample(["margherita pizza", "falafel", "green salad", "miso soup",
                      "cheeseburger", "fries", "hummus"], r.randint(1, 2))
    items = [{"name": name, "quantity": r.randint(1, 3)} for name in names]
    shown = [f"{item['quantity']} {item['name']}" for item in items]
    en = {"restaurant": restaurant, "items": join_en(shown)}
    he = {"restaurant": restaurant, "items": join_values_he(shown)}
    return {"restaurant": restaurant, "items": items}, en, he


TRAVEL_EN = {"driving": "car", "walking": "foot", "transit": "public transit", "cycling": "bike"}
TRAVEL_HE = {"driving": "ברכב", "walking": "ברגל", "transit": "בתחבורה ציבורית",
             "cycling": "באופניים"}


def s_directions(r: random.Random):
    origin, destination = r.sample(PLACES, 2)
    mode = r.choice(list(TRAVEL_EN))
    base = {"origin": origin, "destination": destination}
    args = {"origin": origin, "destination": destination, "mode": mode}
    return args, {**base, "mode": TRAVEL_EN[mode]}, {**base, "mode": TRAVEL_HE[mode]}


PLATFORMS_EN = {"sms": "SMS", "whatsapp": "WhatsApp", "telegram": "Telegram"}


def s_message(r: random.Random):
    recipient, platform = r.choice(NAMES), r.choice(list(PLATFORMS_EN))
    text = r.choice(["running late", "see you at 8", "call me back", "dinner is ready",
                     "happy birthday", "on my way"])
    slots = {"recipient": recipient, "text": text, "platform": PLATFORMS_EN[platform]}
    return {"recipient": recipient, "text": text, "platform": platform}, slots, slots


def s_hotel(r: random.Random):
    city, date = r.choice(CITIES), r.choice(DATES)
    nights, adults, children = r.randint(2, 7), r.randint(1, 4), r.randint(0, 3)
    slots = {"city": city, "date": date, "nights": str(nights), "adults": str(adults),
             "children": str(children)}
    args = {"city": city, "check_in": date, "nights": nights,
            "guests": {"adults": adults, "children": children}}
    return args, slots, slots


def s_tip(r: random.Random):
    bill, percent, people = r.choice([84, 120.4, 56.5, 230, 99.9, 145]), r.choice(
        [10, 12, 15, 18, 20]), r.randint(2, 6)
    slots = {"bill": num_text(bill), "percent": str(percent), "people": str(people)}
    return {"bill_amount": bill, "tip_percent": percent, "split_between": people}, slots, slots


def s_products(r: random.Random):
    query = r.choice(["wireless earbuds", "running shoes", "coffee grinder", "desk lamp",
                      "yoga mat", "phone case"])
    price, in_stock = r.choice([50, 120, 35.5, 80, 200, 19.99]), r.choice([True, False])
    en = {"query": query, "price": num_text(price),
          "stock": "in stock only" if in_stock else "including out of stock"}
    he = {"query": query, "price": num_text(price),
          "stock": "רק מה שבמלאי" if in_stock else "כולל מה שאזל מהמלאי"}
    return {"query": query, "max_price": price, "in_stock_only": in_stock}, en, he


CARRIERS_EN = {"ups": "UPS", "fedex": "FedEx", "dhl": "DHL", "usps": "USPS"}


def s_package(r: random.Random):
    number, carrier = r.choice(TRACKING), r.choice(list(CARRIERS_EN))
    slots = {"num": number, "carrier": CARRIERS_EN[carrier]}
    return {"tracking_number": number, "carrier": carrier}, slots, slots


def s_alarm(r: random.Random):
    time = r.choice(TIMES)
    days = sorted(r.sample(WEEKDAYS, r.randint(1, 3)), key=WEEKDAYS.index)
    en = {"time": time, "days": join_en([day.capitalize() for day in days])}
    he = {"time": time, "days": join_he([WEEKDAYS_HE[day] for day in days])}
    return {"time": time, "days": days}, en, he


TOPICS_HE = {"technology": "טכנולוגיה", "sports": "ספורט", "business": "כלכלה",
             "science": "מדע", "health": "בריאות"}


def s_news(r: random.Random):
    topic, limit = r.choice(list(TOPICS_HE)), r.choice([3, 5, 8, 10, 12])
    en = {"topic": topic, "limit": str(limit)}
    he = {"topic": TOPICS_HE[topic], "limit": str(limit)}
    return {"topic": topic, "limit": limit}, en, he


def s_playlist(r: random.Random):
    name = r.choice(["Road Trip", "Focus", "Sunday Morning", "Gym", "Rainy Day"])
    songs = r.sample(["Yesterday", "Hallelujah", "Imagine", "Blue in Green", "Clocks",
                      "Hotel California", "Jerusalem of Gold"], r.randint(2, 3))
    public = r.choice([True, False])
    en = {"name": name, "songs": join_en(quoted(songs)), "vis": "public" if public else "private"}
    he = {"name": name, "songs": join_values_he(quoted(songs)),
          "vis": "ציבורי" if public else "פרטי"}
    return {"name": name, "songs": songs, "public": public}, en, he


ACTIVITIES_HE = {"running": "ריצה", "cycling": "רכיבה על אופניים", "swimming": "שחייה",
                 "walking": "הליכה"}


def s_workout(r: random.Random):
    activity = r.choice(list(ACTIVITIES_HE))
    minutes, km = r.choice([20, 30, 45, 60, 75]), r.choice([5, 10.5, 1.2, 21.1, 3, 7.5])
    en = {"activity": activity, "minutes": str(minutes), "km": num_text(km)}
    he = {"activity": ACTIVITIES_HE[activity], "minutes": str(minutes), "km": num_text(km)}
    return {"activity": activity, "duration_minutes": minutes, "distance_km": km}, en, he


def s_meeting(r: random.Random):
    attendees = r.sample(EMAILS, r.randint(1, 2))
    date, time = r.choice(DATES), r.choice(TIMES)
    building = r.choice(["Building A", "North Tower", "HQ", "Lab 2"])
    room = r.choice(["101", "3B", "Atlas", "204", "Orion"])
    base = {"date": date, "time": time, "building": building, "room": room}
    args = {"attendees": attendees, "date": date, "time": time,
            "location": {"building": building, "room": room}}
    return (args, {**base, "who": join_en(attendees)},
            {**base, "who": join_values_he(attendees)})


ROOMS_EN = {"living_room": "living room", "kitchen": "kitchen", "bedroom": "bedroom",
            "office": "office", "bathroom": "bathroom"}
ROOMS_HE = {"living_room": "סלון", "kitchen": "מטבח", "bedroom": "חדר השינה",
            "office": "משרד", "bathroom": "אמבטיה"}
COLORS_HE = {"white": "לבן", "warm": "חם", "blue": "כחול", "red": "אדום"}


def s_lights(r: random.Random):
    room, color = r.choice(list(ROOMS_EN)), r.choice(list(COLORS_HE))
    brightness = r.choice([10, 25, 40, 50, 75, 100])
    en = {"room": ROOMS_EN[room], "Room": ROOMS_EN[room].capitalize(), "color": color,
          "brightness": str(brightness)}
    he = {"room": ROOMS_HE[room], "color": COLORS_HE[color], "brightness": str(brightness)}
    return {"room": room, "brightness": brightness, "color": color}, en, he


def s_flight_status(r: random.Random):
    flight, date = r.choice(FLIGHTS), r.choice(DATES)
    slots = {"flight": flight, "date": date}
    return {"flight_number": flight, "date": date}, slots, slots


CARS_EN = {"compact": "compact car", "suv": "SUV", "van": "van"}
CARS_HE = {"compact": "רכב קטן", "suv": "רכב שטח", "van": "ואן"}


def s_car(r: random.Random):
    city, date, days = r.choice(CITIES), r.choice(DATES), r.randint(2, 10)
    car, insurance = r.choice(list(CARS_EN)), r.choice([True, False])
    base = {"city": city, "date": date, "days": str(days)}
    en = {**base, "car": CARS_EN[car],
          "ins": "with full insurance" if insurance else "without full insurance"}
    he = {**base, "car": CARS_HE[car], "ins": "עם ביטוח מלא" if insurance else "בלי ביטוח מלא"}
    args = {"city": city, "pickup_date": date, "days": days, "car_type": car,
            "full_insurance": insurance}
    return args, en, he


ACCOUNTS_HE = {"checking": 'חשבון העו"ש', "savings": "חשבון החיסכון",
               "brokerage": "חשבון ההשקעות"}


def s_transfer(r: random.Random):
    source, target = r.sample(list(ACCOUNTS_HE), 2)
    amount = r.choice([250, 1000, 75.5, 3200, 40, 640])
    en = {"amount": num_text(amount), "src": source, "dst": target}
    he = {"amount": num_text(amount), "src": ACCOUNTS_HE[source], "dst": ACCOUNTS_HE[target]}
    return {"from_account": source, "to_account": target, "amount": amount}, en, he


def s_recipes(r: random.Random):
    ingredients = r.sample(["eggs", "spinach", "rice", "tomatoes", "lentils", "mushrooms",
                            "feta", "potatoes"], r.randint(2, 3))
    minutes, vegetarian = r.choice([15, 20, 30, 40, 60]), r.choice([True, False])
    en = {"ingredients": join_en(ingredients), "minutes": str(minutes),
          "veg": "vegetarian only" if vegetarian else "meat is fine",
          "Veg": "Vegetarian only" if vegetarian else "Meat is fine"}
    he = {"ingredients": join_values_he(ingredients), "minutes": str(minutes),
          "veg": "רק צמחוני" if vegetarian else "גם עם בשר",
          "Veg": "רק צמחוני" if vegetarian else "גם עם בשר"}
    args = {"ingredients": ingredients, "max_minutes": minutes, "vegetarian": vegetarian}
    return args, en, he


T = Template
TOOLS: tuple[Tool, ...] = (
    Tool("get_weather", "Current weather for a city.",
         {"city": STR, "unit": enum("celsius", "fahrenheit")}, ("city", "unit"), s_weather, (
             T("What's the weather in {city} in {unit}?",
               "מה מזג האוויר ב-{city} במעלות {unit}?"),
             T("Give me the current {city} weather, {unit} please.",
               "תן לי את מזג האוויר הנוכחי ב-{city}, ב{unit} בבקשה."),
             T("How hot is it right now in {city}? Use {unit}.",
               "כמה חם עכשיו ב-{city}? תשתמש ב{unit}."))),
    Tool("set_timer", "Start a countdown timer.",
         {"minutes": INT, "label": STR}, ("minutes", "label"), s_timer, (
             T('Set a {minutes} minute timer called "{label}".',
               'הפעל טיימר של {minutes} דקות בשם "{label}".'),
             T('Start a timer for {minutes} minutes and label it "{label}".',
               'תתחיל טיימר ל-{minutes} דקות ותקרא לו "{label}".'),
             T('Timer please: {minutes} minutes, name it "{label}".',
               'טיימר בבקשה: {minutes} דקות, עם השם "{label}".'))),
    Tool("send_email", "Send an e-mail.",
         {"to": STR, "subject": STR, "urgent": BOOL}, ("to", "subject", "urgent"), s_email, (
             T('Send an email to {to} with subject "{subject}". It is {urg}.',
               'שלח מייל ל-{to} עם הנושא "{subject}". זה {urg}.'),
             T('Email {to}, subject "{subject}", {urg}.',
               'תשלח אימייל אל {to}, נושא "{subject}", {urg}.'),
             T('Write to {to} about "{subject}" and flag it as {urg}.',
               'כתוב ל-{to} בנושא "{subject}" וסמן אותו כ{urg}.'))),
    Tool("create_calendar_event", "Add an event to the calendar.",
         {"title": STR, "date": DATE, "start_time": TIME, "duration_minutes": INT},
         ("title", "date", "start_time", "duration_minutes"), s_event, (
             T('Add "{title}" to my calendar on {date} at {time} for {duration} minutes.',
               'הוסף את "{title}" ליומן שלי ב-{date} בשעה {time} למשך {duration} דקות.'),
             T('Create a calendar event "{title}", {date}, starting {time}, lasting {duration} '
               "minutes.",
               'צור אירוע ביומן "{title}", {date}, מתחיל ב-{time}, נמשך {duration} דקות.'),
             T('Put "{title}" on {date} from {time}, {duration} minutes long.',
               'קבע את "{title}" ב-{date} החל מ-{time}, באורך {duration} דקות.'))),
    Tool("convert_currency", "Convert money between currencies.",
         {"amount": NUM, "from_currency": enum(*CURRENCIES), "to_currency": enum(*CURRENCIES)},
         ("amount", "from_currency", "to_currency"), s_currency, (
             T("Convert {amount} {src} to {dst}.", "המר {amount} {src} ל-{dst}."),
             T("How much is {amount} {src} in {dst}?", "כמה זה {amount} {src} ב-{dst}?"),
             T("I have {amount} {src}; what is that in {dst}?",
               "יש לי {amount} {src}; כמה זה שווה ב-{dst}?"))),
    Tool("book_flight", "Book a flight.",
         {"origin": STR, "destination": STR, "date": DATE, "passengers": INT,
          "cabin": enum("economy", "business", "first")},
         ("origin", "destination", "date", "passengers", "cabin"), s_flight, (
             T("Book a flight from {origin} to {destination} on {date} for {n} passengers in "
               "{cabin} class.",
               "הזמן טיסה מ-{origin} ל-{destination} בתאריך {date} ל-{n} נוסעים ב{cabin}."),
             T("I need {n} {cabin} seats flying {origin} to {destination} on {date}.",
               "אני צריך {n} מקומות ב{cabin} בטיסה מ-{origin} ל-{destination} ב-{date}."),
             T("Fly {n} of us {origin} -> {destination}, {date}, {cabin} class.",
               "תזמין ל-{n} מאיתנו טיסה {origin} -> {destination}, {date}, ב{cabin}."))),
    Tool("search_restaurants", "Find restaurants.",
         {"city": STR, "cuisine": enum(*CUISINES_HE), "max_price": {**INT, "minimum": 1,
                                                                    "maximum": 4},
          "open_now": BOOL},
         ("city", "cuisine", "max_price", "open_now"), s_restaurants, (
             T("Find {cuisine} restaurants in {city} {open}, max price level {price}.",
               "מצא מסעדות {cuisine} ב-{city} {open}, רמת מחיר מקסימלית {price}."),
             T("Any {cuisine} places in {city} {open}? Price level at most {price}.",
               "יש מסעדות {cuisine} ב-{city} {open}? רמת מחיר עד {price}."),
             T("Show me {cuisine} food in {city}, price level {price} or lower, {open}.",
               "תראה לי מסעדות {cuisine} ב-{city}, ברמת מחיר {price} או פחות, {open}."))),
    Tool("add_todo", "Add a task to the to-do list.",
         {"task": STR, "priority": enum(*PRIORITIES_HE), "tags": array(STR)},
         ("task", "priority", "tags"), s_todo, (
             T('Add "{task}" to my to-do list with {priority} priority, tags {tags}.',
               'הוסף "{task}" לרשימת המשימות בעדיפות {priority}, תגיות {tags}.'),
             T('New task: "{task}", priority {priority}, tagged {tags}.',
               'משימה חדשה: "{task}", עדיפות {priority}, עם התגיות {tags}.'),
             T('Put "{task}" on my task list as {priority} priority with tags {tags}.',
               'שים את "{task}" ברשימת המשימות שלי בעדיפות {priority} עם התגיות {tags}.'))),
    Tool("translate_text", "Translate text.",
         {"text": STR, "target_language": enum(*LANGUAGES_HE)}, ("text", "target_language"),
         s_translate, (
             T('Translate "{text}" into {lang}.', 'תרגם את "{text}" ל{lang}.'),
             T('How do you say "{text}" in {lang}?', 'איך אומרים "{text}" ב{lang}?'),
             T('I need "{text}" in {lang}, please.', 'אני צריך את "{text}" ב{lang}, בבקשה.'))),
    Tool("play_music", "Play music by an artist.",
         {"artist": STR, "shuffle": BOOL}, ("artist", "shuffle"), s_music, (
             T("Play some {artist} {order}.", "נגן משהו של {artist} {order}."),
             T("Put on {artist}, shuffle {onoff}.", "שים את {artist}, ערבוב {onoff}."),
             T("I want to hear {artist}, {mixed}.", "אני רוצה לשמוע את {artist}, {mixed}."))),
    Tool("set_thermostat", "Set the thermostat.",
         {"temperature": NUM, "mode": enum(*MODES_HE)}, ("temperature", "mode"), s_thermostat, (
             T("Set the thermostat to {temp} degrees on {mode}.",
               "כוון את התרמוסטט ל-{temp} מעלות במצב {mode}."),
             T("Make it {temp} degrees in here, mode {mode}.",
               "תעשה פה {temp} מעלות, מצב {mode}."),
             T("Thermostat: {mode} mode, target {temp} degrees.",
               "תרמוסטט: מצב {mode}, יעד {temp} מעלות."))),
    Tool("get_stock_price", "Latest price of a stock.",
         {"symbol": STR, "exchange": enum("NASDAQ", "NYSE", "TASE")}, ("symbol", "exchange"),
         s_stock, (
             T("What's the stock price of {symbol} on {exchange}?",
               "מה מחיר המניה של {symbol} ב-{exchange}?"),
             T("Quote {symbol} from the {exchange}.",
               "תן לי את השער של {symbol} בבורסת {exchange}."),
             T("How is {symbol} trading on {exchange} today?",
               "איך נסחרת {symbol} היום ב-{exchange}?"))),
    Tool("create_reminder", "Create a reminder.",
         {"text": STR, "time": TIME, "repeat": enum(*REPEATS_EN)}, ("text", "time", "repeat"),
         s_reminder, (
             T('Remind me to "{text}" at {time}, {repeat}.',
               'תזכיר לי "{text}" בשעה {time}, {repeat}.'),
             T('Set a reminder "{text}" for {time} {repeat}.',
               'קבע תזכורת "{text}" לשעה {time} {repeat}.'),
             T('At {time} {repeat}, remind me: "{text}".',
               'ב-{time} {repeat}, תזכיר לי: "{text}".'))),
    Tool("order_food", "Order food for delivery.",
         {"restaurant": STR, "items": array(obj({"name": STR, "quantity": INT},
                                                "name", "quantity"))},
         ("restaurant", "items"), s_food, (
             T("Order from {restaurant}: {items}.", "הזמן מ-{restaurant}: {items}."),
             T("I'd like {items} from {restaurant}.", "אני רוצה {items} מ-{restaurant}."),
             T("Get me {items} delivered from {restaurant}.",
               "תביא לי משלוח של {items} מ-{restaurant}."))),
    Tool("get_directions", "Route between two places.",
         {"origin": STR, "destination": STR, "mode": enum(*TRAVEL_EN)},
         ("origin", "destination", "mode"), s_directions, (
             T("Directions from {origin} to {destination} by {mode}.",
               "הוראות הגעה מ-{origin} ל-{destination} {mode}."),
             T("How do I get to {destination} from {origin} by {mode}?",
               "איך מגיעים ל-{destination} מ-{origin} {mode}?"),
             T("Route me {origin} to {destination}, going by {mode}.",
               "תן לי מסלול מ-{origin} ל-{destination}, {mode}."))),
    Tool("send_message", "Send a chat message.",
         {"recipient": STR, "text": STR, "platform": enum(*PLATFORMS_EN)},
         ("recipient", "text", "platform"), s_message, (
             T('Text {recipient} on {platform}: "{text}".',
               'שלח ל-{recipient} ב-{platform}: "{text}".'),
             T('Send {recipient} a {platform} message saying "{text}".',
               'שלח הודעת {platform} ל-{recipient} שאומרת "{text}".'),
             T('Message {recipient} via {platform}: "{text}".',
               'תכתוב ל-{recipient} דרך {platform}: "{text}".'))),
    Tool("book_hotel", "Book a hotel room.",
         {"city": STR, "check_in": DATE, "nights": INT,
          "guests": obj({"adults": INT, "children": INT}, "adults", "children")},
         ("city", "check_in", "nights", "guests"), s_hotel, (
             T("Book a hotel in {city} from {date} for {nights} nights, {adults} adults and "
               "{children} children.",
               "הזמן מלון ב-{city} מ-{date} ל-{nights} לילות, {adults} מבוגרים ו-{children} "
               "ילדים."),
             T("I need a room in {city}, check-in {date}, {nights} nights, for {adults} adults "
               "and {children} kids.",
               "אני צריך חדר ב-{city}, צ'ק-אין {date}, {nights} לילות, ל-{adults} מבוגרים "
               "ו-{children} ילדים."),
             T("Hotel for {adults} adults plus {children} children in {city}, arriving {date}, "
               "staying {nights} nights.",
               "מלון ל-{adults} מבוגרים ועוד {children} ילדים ב-{city}, הגעה ב-{date}, שהייה של "
               "{nights} לילות."))),
    Tool("calculate_tip", "Split a bill with a tip.",
         {"bill_amount": NUM, "tip_percent": INT, "split_between": INT},
         ("bill_amount", "tip_percent", "split_between"), s_tip, (
             T("Calculate a {percent}% tip on {bill}, split between {people} people.",
               "חשב טיפ של {percent}% על {bill}, מחולק בין {people} אנשים."),
             T("What's a {percent} percent tip on a {bill} bill for {people} people?",
               "כמה זה טיפ של {percent} אחוז על חשבון של {bill} ל-{people} אנשים?"),
             T("Our bill is {bill}; {people} of us want to leave {percent}% tip.",
               "החשבון שלנו {bill}; אנחנו {people} ורוצים להשאיר {percent}% טיפ."))),
    Tool("search_products", "Search the shop.",
         {"query": STR, "max_price": NUM, "in_stock_only": BOOL},
         ("query", "max_price", "in_stock_only"), s_products, (
             T('Search for "{query}" under {price} dollars, {stock}.',
               'חפש "{query}" עד {price} דולר, {stock}.'),
             T('Find me "{query}" costing at most {price}, {stock}.',
               'מצא לי "{query}" במחיר של עד {price}, {stock}.'),
             T('Shop for "{query}", max price {price}, {stock}.',
               'קניות: "{query}", מחיר מקסימלי {price}, {stock}.'))),
    Tool("track_package", "Track a shipment.",
         {"tracking_number": STR, "carrier": enum(*CARRIERS_EN)},
         ("tracking_number", "carrier"), s_package, (
             T("Track my {carrier} package {num}.",
               "עקוב אחרי החבילה שלי ב-{carrier} מספר {num}."),
             T("Where is {carrier} shipment {num}?", "איפה המשלוח של {carrier} עם המספר {num}?"),
             T("Status of tracking number {num} with {carrier}, please.",
               "מה הסטטוס של מספר מעקב {num} ב-{carrier}, בבקשה?"))),
    Tool("set_alarm", "Set a repeating alarm.",
         {"time": TIME, "days": array(enum(*WEEKDAYS))}, ("time", "days"), s_alarm, (
             T("Set an alarm for {time} on {days}.", "כוון שעון מעורר ל-{time} בימים {days}."),
             T("Wake me at {time} every {days}.", "תעיר אותי ב-{time} בכל יום {days}."),
             T("Alarm at {time}, repeating on {days}.",
               "שעון מעורר ב-{time}, חוזר בימים {days}."))),
    Tool("get_news", "Top news headlines.",
         {"topic": enum(*TOPICS_HE), "limit": INT}, ("topic", "limit"), s_news, (
             T("Show me the top {limit} {topic} headlines.",
               "הראה לי את {limit} הכותרות המובילות ב{topic}."),
             T("Get {limit} news stories about {topic}.", "הבא {limit} ידיעות על {topic}."),
             T("What are the latest {topic} news? Just {limit} items.",
               "מה החדשות האחרונות ב{topic}? רק {limit} פריטים."))),
    Tool("create_playlist", "Create a playlist.",
         {"name": STR, "songs": array(STR), "public": BOOL}, ("name", "songs", "public"),
         s_playlist, (
             T('Create a {vis} playlist named "{name}" with {songs}.',
               'צור פלייליסט {vis} בשם "{name}" עם {songs}.'),
             T('New {vis} playlist "{name}": {songs}.', 'פלייליסט {vis} חדש "{name}": {songs}.'),
             T('Make a playlist called "{name}", keep it {vis}, and add {songs}.',
               'תכין פלייליסט בשם "{name}", שיהיה {vis}, ותוסיף {songs}.'))),
    Tool("log_workout", "Log a workout.",
         {"activity": enum(*ACTIVITIES_HE), "duration_minutes": INT, "distance_km": NUM},
         ("activity", "duration_minutes", "distance_km"), s_workout, (
             T("Log a {activity} workout: {minutes} minutes, {km} km.",
               'רשום אימון {activity}: {minutes} דקות, {km} ק"מ.'),
             T("I did {km} km of {activity} in {minutes} minutes, log it.",
               'עשיתי {km} ק"מ של {activity} ב-{minutes} דקות, תרשום את זה.'),
             T("Record {minutes} minutes of {activity} covering {km} kilometers.",
               "תעד {minutes} דקות של {activity} למרחק {km} קילומטרים."))),
    Tool("schedule_meeting", "Schedule a meeting in a room.",
         {"attendees": array(STR), "date": DATE, "time": TIME,
          "location": obj({"building": STR, "room": STR}, "building", "room")},
         ("attendees", "date", "time", "location"), s_meeting, (
             T("Schedule a meeting with {who} on {date} at {time} in {building}, room {room}.",
               "קבע פגישה עם {who} ב-{date} בשעה {time} ב-{building}, חדר {room}."),
             T("Set up a meeting {date} {time} for {who}; location {building} room {room}.",
               "תארגן פגישה ב-{date} ב-{time} עבור {who}; מיקום {building} חדר {room}."),
             T("Invite {who} to a meeting in {building}, room {room}, on {date} at {time}.",
               "הזמן את {who} לפגישה ב-{building}, חדר {room}, ב-{date} בשעה {time}."))),
    Tool("set_lights", "Control smart lights in a room.",
         {"room": enum(*ROOMS_EN), "brightness": {**INT, "minimum": 0, "maximum": 100},
          "color": enum(*COLORS_HE)},
         ("room", "brightness", "color"), s_lights, (
             T("Set the {room} lights to {brightness}% {color}.",
               "כוון את האורות ב{room} ל-{brightness}% בצבע {color}."),
             T("Make the {room} light {color} at {brightness} percent brightness.",
               "תעשה את האור ב{room} {color} בעוצמה של {brightness} אחוז."),
             T("{Room} lights: {color}, {brightness}%.",
               "אורות ב{room}: {color}, {brightness}%."))),
    Tool("check_flight_status", "Status of a flight.",
         {"flight_number": STR, "date": DATE}, ("flight_number", "date"), s_flight_status, (
             T("Is flight {flight} on {date} on time?", "האם טיסה {flight} ב-{date} בזמן?"),
             T("Check the status of {flight} for {date}.",
               "בדוק את הסטטוס של {flight} לתאריך {date}."),
             T("Any delays on {flight}, {date}?", "יש עיכובים בטיסה {flight}, {date}?"))),
    Tool("rent_car", "Rent a car.",
         {"city": STR, "pickup_date": DATE, "days": INT, "car_type": enum(*CARS_EN),
          "full_insurance": BOOL},
         ("city", "pickup_date", "days", "car_type", "full_insurance"), s_car, (
             T("Rent a {car} in {city} from {date} for {days} days, {ins}.",
               "שכור {car} ב-{city} מ-{date} ל-{days} ימים, {ins}."),
             T("I need a {car} for {days} days starting {date} in {city}, {ins}.",
               "אני צריך {car} ל-{days} ימים החל מ-{date} ב-{city}, {ins}."),
             T("Car rental: {city}, pickup {date}, {days} days, {car}, {ins}.",
               "השכרת רכב: {city}, איסוף ב-{date}, {days} ימים, {car}, {ins}."))),
    Tool("transfer_money", "Move money between your accounts.",
         {"from_account": enum(*ACCOUNTS_HE), "to_account": enum(*ACCOUNTS_HE), "amount": NUM},
         ("from_account", "to_account", "amount"), s_transfer, (
             T("Transfer {amount} from my {src} account to my {dst} account.",
               "העבר {amount} מ{src} ל{dst}."),
             T("Move {amount} out of {src} into {dst}.", "תעביר {amount} מ{src} אל {dst}."),
             T("Send {amount} from {src} over to {dst}, please.",
               "שלח {amount} מ{src} ל{dst}, בבקשה."))),
    Tool("search_recipes", "Find recipes.",
         {"ingredients": array(STR), "max_minutes": INT, "vegetarian": BOOL},
         ("ingredients", "max_minutes", "vegetarian"), s_recipes, (
             T("Find recipes with {ingredients} ready in {minutes} minutes, {veg}.",
               "מצא מתכונים עם {ingredients} שמוכנים תוך {minutes} דקות, {veg}."),
             T("What can I cook with {ingredients} in under {minutes} minutes? {Veg}.",
               "מה אפשר לבשל עם {ingredients} בפחות מ-{minutes} דקות? {Veg}."),
             T("Recipe ideas: {ingredients}, max {minutes} minutes, {veg}.",
               "רעיונות למתכון: {ingredients}, עד {minutes} דקות, {veg}."))),
)


# Requests no demo tool can serve (and none of the offered ones pretends to): English, and the
# matched Hebrew translation. The right answer is not to call.
NO_CALL_QUERIES: tuple[tuple[str, str], ...] = (
    ("Write a short poem about the sea.", "כתוב שיר קצר על הים."),
    ("What is the capital of Australia?", "מה עיר הבירה של אוסטרליה?"),
    ("Explain in two sentences how photosynthesis works.",
     "הסבר בשני משפטים איך עובדת פוטוסינתזה."),
    ("Tell me a joke about programmers.", "ספר לי בדיחה על מתכנתים."),
    ("How many legs does a spider have?", "כמה רגליים יש לעכביש?"),
    ("Suggest a name for my new puppy.", "תציע שם לגור הכלבים החדש שלי."),
    ("What is the square root of 144?", "מה השורש הריבועי של 144?"),
    ("Summarize the plot of Romeo and Juliet.", "סכם את העלילה של רומיאו ויוליה."),
    ("Who painted the Mona Lisa?", "מי צייר את המונה ליזה?"),
    ("How do I tie a tie?", "איך קושרים עניבה?"),
    ("Why is the sky blue?", "למה השמיים כחולים?"),
    ("What year did the Berlin Wall fall?", "באיזו שנה נפלה חומת ברלין?"),
)


def abstention_rows(rng: random.Random) -> list[dict[str, Any]]:
    """The test split's abstention rows: each English request offered 3 tools (drawn with
    ``rng``), then its Hebrew translation with the same tools."""
    roots, translations = [], []
    for index, (en, he) in enumerate(NO_CALL_QUERIES, 1):
        tools = [tool.schema() for tool in rng.sample(TOOLS, 3)]
        common = {"tools": tools, "expect": "no_call"}
        roots.append({"example_id": f"en-n{index:02d}", "language": "en",
                      "source_example_id": None, "query": en, **common})
        translations.append({"example_id": f"he-n{index:02d}", "language": "he",
                             "source_example_id": f"en-n{index:02d}", "query": he, **common})
    return roots + translations


# ---------------------------------------------------------------- building the splits


def normalize_query(text: str) -> str:
    """Lower-case, letters and digits only, single spaces (the disjointness key)."""
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


@dataclass
class Draft:
    """One English root (and its Hebrew translation) before ids are assigned."""

    tool: Tool
    template: int
    arguments: dict[str, Any]
    en: str
    he: str
    tools: list[dict[str, Any]]


def draft(tool: Tool, template: int, rng: random.Random) -> Draft:
    """Sample arguments, render both languages and pick 2-3 distractors (shuffled in)."""
    arguments, en_slots, he_slots = tool.sample(rng)
    phrasing = tool.templates[template]
    others = [other for other in TOOLS if other.name != tool.name]
    distractors = rng.sample(others, 3 if rng.random() < 0.25 else 2)
    offered = [tool, *distractors]
    rng.shuffle(offered)
    return Draft(tool, template, arguments, phrasing.en.format(**en_slots),
                 phrasing.he.format(**he_slots), [t.schema() for t in offered])


def draw_split(templates: tuple[int, ...], per_template: int, rng: random.Random,
               taken: set[str]) -> list[Draft]:
    """Draw ``per_template`` drafts per (tool, template) with queries unseen in ``taken``."""
    drafts = []
    for tool in TOOLS:
        for template in templates:
            for _ in range(per_template):
                for _attempt in range(200):
                    candidate = draft(tool, template, rng)
                    keys = {normalize_query(candidate.en), normalize_query(candidate.he)}
                    if not keys & taken:
                        break
                else:
                    raise RuntimeError(f"{tool.name} template {template}: no unseen query left")
                taken.update(keys)
                drafts.append(candidate)
    return drafts


def row(example_id: str, language: str, source: str | None, query: str,
        d: Draft) -> dict[str, Any]:
    """A prepared row in PREPARED_KEYS order."""
    values = {"example_id": example_id, "language": language, "source_example_id": source,
              "query": query, "tools": d.tools,
              "gold_call": {"name": d.tool.name, "arguments": d.arguments}}
    return {key: values[key] for key in PREPARED_KEYS}


def build(seed: int = SEED) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Build (train rows, test rows): English roots first, then their Hebrew translations."""
    rng = random.Random(seed)
    taken: set[str] = set()
    test_drafts = draw_split(TEST_TEMPLATES, TEST_PER_TEMPLATE, rng, taken)
    train_drafts = draw_split(TRAIN_TEMPLATES, TRAIN_PER_TEMPLATE, rng, taken)
    rng.shuffle(train_drafts)
    # test: one root per tool for sure, then fill up to TEST_ROOTS from the second draws
    first, second = test_drafts[::TEST_PER_TEMPLATE], test_drafts[1::TEST_PER_TEMPLATE]
    test_drafts = first + rng.sample(second, TEST_ROOTS - len(first))
    rng.shuffle(test_drafts)
    translated = set(rng.sample(range(len(test_drafts)), TEST_HEBREW))

    train = [row(f"train-en-{i:04d}", "en", None, d.en, d) for i, d in enumerate(train_drafts, 1)]
    train += [row(f"train-he-{i:04d}", "he", f"train-en-{i:04d}", d.he, d)
              for i, d in enumerate(train_drafts, 1)]
    test = [row(f"en-{i:04d}", "en", None, d.en, d) for i, d in enumerate(test_drafts, 1)]
    test += [row(f"he-{i:04d}", "he", f"en-{i:04d}", d.he, d)
             for i, d in enumerate(test_drafts, 1) if i - 1 in translated]
    test += abstention_rows(random.Random(ABSTENTION_SEED))
    return train, test


def check(train: list[dict[str, Any]], test: list[dict[str, Any]]) -> list[str]:
    """The dataset's promises; returns the list of broken ones (empty when all hold)."""
    problems = []
    if len(TOOLS) < 25 or len({tool.name for tool in TOOLS}) != len(TOOLS):
        problems.append("need >= 25 distinct tools")
    if len(train) < 300:
        problems.append(f"train has {len(train)} rows (< 300)")
    test_en = [r for r in test if r["language"] == "en" and "gold_call" in r]
    test_he = [r for r in test if r["language"] == "he" and "gold_call" in r]
    if len(test_en) < 40 or len(test_he) < 30:
        problems.append(f"test has {len(test_en)} en / {len(test_he)} he (need 40 / 30)")
    train_keys = {normalize_query(r["query"]) for r in train}
    overlap = [r["example_id"] for r in test if normalize_query(r["query"]) in train_keys]
    if overlap:
        problems.append(f"test queries seen in train: {overlap[:5]}")
    for name, rows in (("train", train), ("test", test)):
        keys = [normalize_query(r["query"]) for r in rows]
        if len(set(keys)) != len(keys):
            problems.append(f"{name} repeats a normalized query")
        for r in rows:
            offered = len(r["tools"])
            if not 3 <= offered <= 4:
                problems.append(f"{r['example_id']}: {offered} tools offered")
            if r["language"] == "he" and not re.search("[\u05d0-\u05ea]", r["query"]):
                problems.append(f"{r['example_id']}: Hebrew row without Hebrew letters")
        for index, r in enumerate(rows, 1):
            validate_prepared_row(r, f"{name}:{index}", index)
        check_pairs([validate_prepared_row(r, f"{name}:{i}", i)
                     for i, r in enumerate(rows, 1)], name)
    used = {r["gold_call"]["name"] for r in test_en}
    if used != {tool.name for tool in TOOLS}:
        problems.append(f"test misses tools: {sorted({t.name for t in TOOLS} - used)}")
    return problems


def jsonl_text(rows: list[dict[str, Any]]) -> str:
    """The exact bytes the prepared files hold (UTF-8 JSON lines)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv: list[str] | None = None) -> int:
    """Build, check and write (or, with --check, compare against) the prepared files."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR)
    parser.add_argument("--check", action="store_true", help="compare with the files on disk")
    args = parser.parse_args(argv)
    train, test = build(args.seed)
    problems = check(train, test)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    outputs = {"train.prepared.jsonl": train, "test.prepared.jsonl": test}
    for name, rows in outputs.items():
        path = args.out_dir / name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != jsonl_text(rows):
                print(f"{path} differs from the generator's output", file=sys.stderr)
                return 1
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(jsonl_text(rows), encoding="utf-8")
            tmp.replace(path)
            read_prepared(path)  # the formatter's own validation
    en = sum(r["language"] == "en" for r in test)
    print(f"{len(TOOLS)} tools; train {len(train)} rows; test {len(test)} rows "
          f"({en} en, {len(test) - en} he){' (unchanged)' if args.check else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
