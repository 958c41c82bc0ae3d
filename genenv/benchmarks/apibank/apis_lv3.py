"""The 22 level-3 API-Bank APIs (``lv3_apis/*.py`` upstream) over ``meta/lv3_api_tables.json``.

Upstream keeps these tables inside the classes; the data folder has them as JSON (tuples
became lists, datetimes became ``'%Y-%m-%d %H:%M:%S'`` text, the tax thresholds became
string keys). Results follow the upstream shapes (``{'meetings': [...]}``,
``{'salary_after_tax': ...}``, a bare list for UserWatchedMovies, a bare string for
TravelStatus, ...). A missing key in a table raises ``KeyError`` upstream, whose text
(``"'Berlin'"``) becomes the exception; that is reproduced.

Differences (robustness only): FlightSearch and HotelAvailability convert their dates on a
copy (upstream converts the shared table in place, so a second identical call in the same
process fails); GetWeatherForCoordinates reports unknown coordinates as an exception
(upstream crashes with an uncaught TypeError). ``AddMeeting`` keeps its meetings in the
episode state. ToolSearcher is provided by :mod:`.tool_searcher`.
"""

from __future__ import annotations

from typing import Any

from .apis_lv12 import calculate
from .world import ApiImpl, World, strptime

DT = "%Y-%m-%d %H:%M:%S"


def _table(w: World, api: str, name: str) -> Any:
    return w.read("__lv3__")[api]["tables"][name]


def account_info(w: World, username, password):
    for (user, pwd), info in _table(w, "AccountInfo", "database"):
        if user == username and pwd == password:
            return info
    raise Exception("User not found.")


def add_meeting(w: World, meeting_topic, start_time, end_time, location, attendees):
    strptime(start_time, DT)
    strptime(end_time, DT)
    if meeting_topic.strip() == "":
        raise Exception("Meeting Topic should not be null")
    w.tool_state.setdefault("lv3_meetings", []).append(
        {
            "meeting_topic": meeting_topic,
            "start_time": start_time,
            "end_time": end_time,
            "location": location,
            "attendees": attendees,
        }
    )
    return "success"


def calculator(w: World, formula):
    return calculate(formula)


def clothing_recommendation(w: World, temperature, humidity, weather_conditions):
    options: list[str] = []
    if temperature < 10:
        options += ["Warm coat", "Hat", "Gloves"]
    if 10 <= temperature < 20:
        options += ["Light jacket", "Long-sleeved shirt"]
    if 20 <= temperature < 30:
        options += ["T-shirt", "Shorts"]
    if temperature >= 30:
        options += ["Sun hat", "Sunglasses", "Loose-fitting clothes"]
    if humidity > 70:
        options += ["Umbrella", "Waterproof shoes"]
    if "rain" in weather_conditions.lower():
        options.append("Raincoat")
    return {"clothing_options": options}


def email_reminder(w: World, content, time, location, recipient):
    strptime(time, DT)
    if content.strip() == "":
        raise Exception("Content should not be empty")
    return "success"


def flight_search(w: World, source, destination, travel_dates):
    day = strptime(travel_dates, "%Y-%m-%d").date()
    flights = []
    for flight in _table(w, "FlightSearch", "flight_data"):
        if (
            flight["source"] == source
            and flight["destination"] == destination
            and strptime(flight["departure_date"], DT).date() == day
        ):
            flights.append(dict(flight))
    return {"flights": flights}


def geocoding(w: World, address):
    lat, lon = _table(w, "Geocoding", "address_to_coordinates")[address]
    return {"latitude": lat, "longitude": lon}


def get_occupation_salary(w: World, occupation):
    table = _table(w, "GetOccupationSalary", "salary_info")
    if occupation not in table:
        raise Exception("The occupation is not in the database.")
    return {"salary": table[occupation]}


def get_weather_for_coordinates(w: World, latitude, longitude):
    for (lat, lon), weather in _table(w, "GetWeatherForCoordinates", "coordinates_to_weather"):
        if (lat, lon) == (latitude, longitude):
            return {
                "temperature": weather["temperature"],
                "humidity": weather["humidity"],
                "description": weather["description"],
            }
    raise Exception("'NoneType' object is not subscriptable")


def hotel_availability(w: World, destination, check_in_date, check_out_date):
    user_in = strptime(check_in_date, "%Y-%m-%d")
    user_out = strptime(check_out_date, "%Y-%m-%d")
    hotels = []
    for hotel in _table(w, "HotelAvailability", "hotel_database").values():
        h_in, h_out = strptime(hotel["check_in_date"], DT), strptime(hotel["check_out_date"], DT)
        if hotel["destination"] == destination and user_in >= h_in and user_out <= h_out:
            hotels.append(
                {
                    "destination": hotel["destination"],
                    "check_in_date": h_in.strftime("%Y-%m-%d"),
                    "check_out_date": h_out.strftime("%Y-%m-%d"),
                }
            )
    return {"hotels": hotels}


def _int_keyed(table: dict) -> dict:
    return {int(k): v for k, v in table.items()}


def like_count(w: World, post_id):
    table = _int_keyed(_table(w, "LikeCount", "database"))
    if post_id not in table:
        raise Exception(f"Post with ID {post_id} does not exist.")
    return {"like_count": table[post_id]}


def movie_recommendations(w: World, preferences):
    table = _table(w, "MovieRecommendations", "database")
    movies: list[str] = []
    for genre in preferences:
        if genre not in table:
            raise KeyError(genre)
        movies.extend(table[genre])
    return {"recommended_movies": movies}


def nearby_restaurants(w: World, latitude, longitude, distance):
    return {"restaurants": _table(w, "NearbyRestaurants", "restaurants")}


def organization_members(w: World, organization):
    return {"members": _table(w, "OrganizationMembers", "database")[organization]}


def query_meeting(w: World, user_name):
    return {"meetings": _table(w, "QueryMeeting", "database")[user_name]}


def tax_calculator(w: World, salary):
    rates = {float(k): v for k, v in _table(w, "TaxCalculator", "tax_rates").items()}
    rate = next(r for threshold, r in sorted(rates.items(), reverse=True) if salary >= threshold)
    return {"salary_after_tax": salary - salary * rate}


def travel_status(w: World, member_name):
    return _table(w, "TravelStatus", "database")[member_name]


def personal_info_update(w: World, username, password, address):
    for (user, pwd), _info in _table(w, "PersonalInfoUpdate", "database"):
        if user == username and pwd == password:
            w.tool_state.setdefault("lv3_addresses", {})[user] = address
            return {"status": "success"}
    raise Exception("User not found.")


def user_posts(w: World, user_id):
    return {"post_ids": _int_keyed(_table(w, "UserPosts", "database"))[user_id]}


def user_watched_movies(w: World, user_name):
    table = _table(w, "UserWatchedMovies", "database")
    if user_name not in table:
        raise Exception("User not found.")
    return table[user_name]


def user_movie_preferences(w: World, user_name):
    return {"preferences": _table(w, "UserMoviePreferences", "database")[user_name]}


def _impl(name, func, params) -> ApiImpl:
    return ApiImpl(name=name, func=func, params=tuple(params))


LV3_IMPLS: dict[str, ApiImpl] = {
    impl.name: impl
    for impl in [
        _impl("AccountInfo", account_info, ("username", "password")),
        _impl("AddMeeting", add_meeting, ("meeting_topic", "start_time", "end_time", "location", "attendees")),
        _impl("Calculator", calculator, ("formula",)),
        _impl("ClothingRecommendation", clothing_recommendation, ("temperature", "humidity", "weather_conditions")),
        _impl("EmailReminder", email_reminder, ("content", "time", "location", "recipient")),
        _impl("FlightSearch", flight_search, ("source", "destination", "travel_dates")),
        _impl("Geocoding", geocoding, ("address",)),
        _impl("GetOccupationSalary", get_occupation_salary, ("occupation",)),
        _impl("GetWeatherForCoordinates", get_weather_for_coordinates, ("latitude", "longitude")),
        _impl("HotelAvailability", hotel_availability, ("destination", "check_in_date", "check_out_date")),
        _impl("LikeCount", like_count, ("post_id",)),
        _impl("MovieRecommendations", movie_recommendations, ("preferences",)),
        _impl("NearbyRestaurants", nearby_restaurants, ("latitude", "longitude", "distance")),
        _impl("OrganizationMembers", organization_members, ("organization",)),
        _impl("QueryMeeting", query_meeting, ("user_name",)),
        _impl("TaxCalculator", tax_calculator, ("salary",)),
        _impl("TravelStatus", travel_status, ("member_name",)),
        _impl("PersonalInfoUpdate", personal_info_update, ("username", "password", "address")),
        _impl("UserPosts", user_posts, ("user_id",)),
        _impl("UserWatchedMovies", user_watched_movies, ("user_name",)),
        _impl("UserMoviePreferences", user_movie_preferences, ("user_name",)),
    ]
}  # fmt: skip
